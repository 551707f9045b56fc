// The producer of Apache Kafka's Java client (kafka-clients) in a child process, speaking the protocol of
// harness/workload/foreignproc.py. Compiled once against a Kafka distribution's jars (Java 17 or later; the
// harness keeps the classes in its cache folder: foreignenv.java_classes), then run with them (CP: the classes' folder
// and "$KAFKA_HOME/libs/*"; `java -cp "$KAFKA_HOME/libs/*" ChaosProducer.java` runs it from source alike):
//
//     java -cp CP ChaosProducer                 the workload: the task on stdin, one JSON line
//     java -cp CP ChaosProducer --version       answers `client kafka-clients VERSION`
//     java -cp CP ChaosProducer --check JSON    builds the producer with those settings (Java property names),
//                                               connecting nowhere: `ok`, or `refused WORDS` (the client's words)
//
// Message i goes to partition i % P with value i / P (ASCII decimal, no key), handed in index order, in chunks
// (a transactional task: transactions of S sends, each named by its `b` line, committed or aborted as planned,
// each ending with a `t` line: transactions()). Each send's outcome is told once (Report): its callback runs on the client's I/O
// thread, which is also the thread that sends, so it records primitives only (Acks), and the main loop writes
// them between chunks as one binary `B` frame, nothing formatted per send (a String built per ack on the I/O
// thread halved the throughput), at most every 20 ms while it sends (EMIT_EVERY_NS). An
// error is named by its exception's simple class name. A send whose send() threw, and whose record the client
// never took (it never called back), was refused before anything was transmitted (`r`): the workload ends there.
// So does a fatal error, the client failing for good (its idempotence or transaction state holds one:
// ProducerFencedException, ClusterAuthorizationException, UnsupportedVersionException, ...; it then aborts every
// batch): looked for between chunks once a send has failed, and at the end; the result's `fatal` names it.
// SIGTERM stops the handing; the producer is then closed at once (what is unsent or unacknowledged fails:
// unknown), and the result follows. A `restart` from the run (producer-restart) closes the instance at once and
// a new one hands again what was not acknowledged (restart()); a transactional one aborts the open transaction and
// sends its messages again in the next ones (restartTransactional()).
// The client's own log (log4j) goes to stderr, which the run keeps as the variant's client log.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

import com.fasterxml.jackson.databind.ObjectMapper;

public class ChaosProducer {
    static final String NOWHERE = "127.0.0.1:9";
    static final AtomicBoolean STOP = new AtomicBoolean();
    // The run said `go`: from then on SIGTERM stops the handing. Before it nothing was handed, and building or
    // connecting the client may block for max.block.ms: the child answers its (empty) result and ends at once.
    static volatile boolean going = false;
    static final ConcurrentLinkedQueue<String> LINES = new ConcurrentLinkedQueue<>();  // all but `a` lines
    static final Lines OUT = new Lines();
    static int partitions = 1;
    static String workloadTopic = "";  // the topic (a zombie resuming sends the rest of its transaction there)
    static boolean firstAckLogged = false;
    static PrintStream out;
    static volatile boolean failedSend = false;  // a callback reported an error: look for a fatal one

    /** Acknowledged sends as (index, offset, latency ns) triples, appended by the callbacks (the I/O thread; the
     *  main thread too when send() fails a record at once), taken by the main thread: two arrays swapped. */
    static final class Acks {
        static final long NO_OFFSET = Long.MIN_VALUE;
        private long[] filling = new long[3 * 4096], spare = new long[3 * 4096];
        private int size;

        synchronized void add(long index, long offset, long nanos) {
            if (size + 3 > filling.length) {
                filling = java.util.Arrays.copyOf(filling, filling.length * 2);
            }
            filling[size] = index;
            filling[size + 1] = offset;
            filling[size + 2] = nanos;
            size += 3;
        }

        /** What was added since the last call, in the returned array's [0, count): valid until the next call. */
        long[] take(int[] count) {
            synchronized (this) {
                long[] full = filling;
                count[0] = size;
                filling = spare.length >= full.length ? spare : new long[full.length];
                spare = full;
                size = 0;
                return full;
            }
        }
    }

    /** One send's delivery callback: its outcome is told once, by its first report. kafka-clients may call back
     *  twice: send() calls back with an error raised after the record was appended (the transaction manager's,
     *  e.g. the producer fenced), and the record's batch calls back again when it is aborted. A send() that
     *  throws may also have appended its record: its callback, if the client calls it, says what became of it
     *  (the `r` line waits for the close). The callback runs on the client's I/O thread, which is also the thread
     *  that sends: it records primitives only (Acks). The main thread keeps the first report of each send
     *  (Sink.first, in emit(): errors, then acks, then refusals), rather than a compare-and-set per send on the
     *  callback's path (a volatile write to an object the main thread made: its cost was within the bench's
     *  noise, but it bought nothing the main thread cannot do). The client's two calls for one send are both
     *  errors (send()'s and the aborted batch's, in either order: experiments/known-bugs/java-double-callback.md),
     *  and the failed queue keeps their order: the first is told. An ack after an error of the same send would
     *  not be (errors are told first), but none comes: a transactional batch is only sent once its partition is
     *  in the transaction, which a send() that failed there never got. REPEATED: the second calls (main thread). */
    static long REPEATED = 0;
    /** The run's lines after the task (go, restart, flush), read by a thread of their own: a restart is asked
     *  while the workload sends. END: the end of stdin (the run is stopping). */
    static final java.util.concurrent.LinkedBlockingQueue<String> COMMANDS =
            new java.util.concurrent.LinkedBlockingQueue<>();
    static final String END = "";
    /** The producer instance now (a restart replaces it), its session (0, then one more a restart). */
    static org.apache.kafka.clients.producer.KafkaProducer<byte[], byte[]> producer;
    static long session = 0;
    /** Message index -> told acknowledged (kept by emit(), on the main thread): what a new instance skips. */
    static final java.util.BitSet ACKED = new java.util.BitSet();

    /** When an acknowledgement came (System.nanoTime()), read once per batch: the client calls back a batch's
     *  sends one after another, microseconds apart, and a clock read per ack cost the I/O thread about 15 % more
     *  CPU (measured: 1.17 against 1.02 s per 3,000,000 acks; a bare loop's 0.83). A batch is known by its
     *  TopicPartition object (kafka-clients makes one per batch, and every RecordMetadata of the batch holds it,
     *  in a private field), its offsets running on by one; the clock is read again at least every 256 acks (the
     *  bound for the one case where two batches share that object: a batch split for being too large).
     *  A client whose RecordMetadata differs: read per ack. One per producer instance (its Sink): only that
     *  instance's I/O thread calls it. */
    static final class Clock {
        static final java.lang.invoke.VarHandle BATCH = batchField();
        Object batch;
        long offset, now;
        int reads;

        static java.lang.invoke.VarHandle batchField() {
            try {
                var type = org.apache.kafka.clients.producer.RecordMetadata.class;
                return java.lang.invoke.MethodHandles.privateLookupIn(type, java.lang.invoke.MethodHandles.lookup())
                        .findVarHandle(type, "topicPartition", org.apache.kafka.common.TopicPartition.class);
            } catch (ReflectiveOperationException | RuntimeException e) {
                System.err.println("acknowledgements timed one by one: " + e);
                return null;
            }
        }

        long acked(org.apache.kafka.clients.producer.RecordMetadata md) {
            if (BATCH == null || !md.hasOffset()) {
                return System.nanoTime();
            }
            Object of = (org.apache.kafka.common.TopicPartition) BATCH.get(md);
            long at = md.offset();
            if (of != batch || at != offset + 1 || ++reads == 256) {
                batch = of;
                reads = 0;
                now = System.nanoTime();
            }
            offset = at;
            return now;
        }
    }

    /** What one producer instance's callbacks record (on its I/O thread; on the main thread when send() fails a
     *  record at once): its acknowledgements, its failed sends' lines, the clock of its batches. A paused
     *  instance's is held until it resumes, and told then in its own session (`z` lines: resume()). */
    static final class Sink {
        final Acks acks = new Acks();
        final ConcurrentLinkedQueue<Failed> failed = new ConcurrentLinkedQueue<>();
        final Clock clock = new Clock();
        /** Sends whose send() threw: each is told refused (`r`) unless a callback told it (main thread only). */
        final java.util.List<Failed> refused = new java.util.ArrayList<>();
        /** Sends told (main thread only, in emit()): a send is told once, by its first report. */
        final java.util.BitSet told = new java.util.BitSet();

        /** true the first time send `index` is told; a later report of it is the client calling back again. */
        boolean first(long index) {
            if (told.get((int) index)) {
                REPEATED++;
                return false;
            }
            told.set((int) index);
            return true;
        }
    }

    /** A send's failure as its line (`e`, or `r`) to be told. */
    record Failed(long index, String line) {
    }

    static Sink sink = new Sink();  // the current instance's (each Report keeps its own instance's)

    static final class Report implements org.apache.kafka.clients.producer.Callback {
        final long index, handedAt;
        final Sink to;

        Report(long index, long handedAt, Sink to) {
            this.index = index;
            this.handedAt = handedAt;
            this.to = to;
        }

        /** Told refused (`r`) at the next emit() of its sink unless a callback told it before. */
        void refused(String as) {
            to.refused.add(new Failed(index, "r " + index % partitions + " " + index / partitions + " " + as));
        }

        @Override
        public void onCompletion(org.apache.kafka.clients.producer.RecordMetadata md, Exception ex) {
            if (ex == null) {
                to.acks.add(index, md.hasOffset() ? md.offset() : Acks.NO_OFFSET, to.clock.acked(md) - handedAt);
            } else {
                to.failed.add(new Failed(index, "e " + index % partitions + " " + index / partitions + " " + name(ex)
                        + " " + ms(handedAt)));
                failedSend = true;
            }
        }
    }

    /** The protocol's lines as ASCII bytes (and a `B` frame's binary part), put together by the main thread and
     *  handed, one piece per flush, to a thread of their own that writes them to stdout in order: the workload
     *  never waits for the run to read. A run busy writing its delivery log (about 1 s of its CPU per 4,000,000
     *  sends) held a child that wrote itself for as long, once its pipe was full: 0.69 of the bare loop's rate
     *  at 5,000,000 sends, 0.84 without that pause (bench/clients.py, 2026-11-29). A piece that cannot be
     *  written (the run went away) stops the workload, as the end of stdin does. */
    static final class Lines {
        private byte[] buf = new byte[1 << 16];
        private int pos;
        private final FileOutputStream stdout = new FileOutputStream(FileDescriptor.out);
        private final java.util.concurrent.LinkedBlockingQueue<byte[]> pieces =
                new java.util.concurrent.LinkedBlockingQueue<>();
        private long handed, written;  // pieces so far (guarded by this)
        private Thread writer;

        private void room(int n) {
            if (pos + n > buf.length) {
                buf = java.util.Arrays.copyOf(buf, Math.max(buf.length * 2, pos + n));
            }
        }

        Lines put(char c) {
            room(1);
            buf[pos++] = (byte) c;
            return this;
        }

        Lines put(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            room(b.length);
            System.arraycopy(b, 0, buf, pos, b.length);
            pos += b.length;
            return this;
        }

        Lines put(long x) {
            room(20);
            if (x < 0) {
                if (x == Long.MIN_VALUE) {
                    return put(Long.toString(x));
                }
                buf[pos++] = '-';
                x = -x;
            }
            int start = pos;
            do {
                buf[pos++] = (byte) ('0' + x % 10);
                x /= 10;
            } while (x > 0);
            for (int i = start, j = pos - 1; i < j; i++, j--) {
                byte t = buf[i];
                buf[i] = buf[j];
                buf[j] = t;
            }
            return this;
        }

        /** longs[0..n) as little-endian 8-byte integers. */
        Lines putLongs(long[] longs, int n) {
            room(8 * n);
            java.nio.ByteBuffer.wrap(buf, pos, 8 * n).order(java.nio.ByteOrder.LITTLE_ENDIAN).asLongBuffer()
                    .put(longs, 0, n);
            pos += 8 * n;
            return this;
        }

        /** What was put so far, handed to the writer (the main thread's; the others hand() whole lines). */
        void flush() {
            if (pos > 0) {
                hand(java.util.Arrays.copyOf(buf, pos));
                pos = 0;
            }
        }

        synchronized void hand(byte[] piece) {
            if (writer == null) {
                writer = new Thread(this::write, "stdout");
                writer.setDaemon(true);
                writer.start();
            }
            pieces.add(piece);
            handed++;
        }

        /** Returns once every piece handed so far is written (or could not be). */
        synchronized void drain() throws InterruptedException {
            while (written < handed) {
                wait();
            }
        }

        private void write() {
            boolean broken = false;
            while (true) {
                byte[] piece;
                try {
                    piece = pieces.take();
                } catch (InterruptedException e) {
                    return;
                }
                if (!broken) {
                    try {
                        stdout.write(piece);
                    } catch (java.io.IOException e) {  // the run went away: what is left is dropped
                        broken = true;
                        STOP.set(true);
                    }
                }
                synchronized (this) {
                    written++;
                    notifyAll();
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        // The protocol owns stdout; anything else that prints (log4j's default console) goes to stderr.
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        // The client's log level: WARN, or KAFKA_CHAOS_JAVA_LOG (DEBUG shows each transactional request and state).
        System.setProperty("org.apache.logging.log4j.level",
                System.getenv().getOrDefault("KAFKA_CHAOS_JAVA_LOG", "WARN"));
        if (args.length > 0 && args[0].equals("--version")) {
            out.println("client kafka-clients " + org.apache.kafka.common.utils.AppInfoParser.getVersion());
            out.flush();
            return;
        }
        if (args.length > 1 && args[0].equals("--check")) {
            System.exit(check(args[1]));
        }
        long started = System.nanoTime();
        sun.misc.Signal.handle(new sun.misc.Signal("TERM"), sig -> {
            STOP.set(true);
            if (!going) {
                OUT.hand(("result " + result(0, "", "", started) + "\n").getBytes(StandardCharsets.UTF_8));
                try {
                    OUT.drain();
                } catch (InterruptedException e) {
                    // halting anyway
                }
                Runtime.getRuntime().halt(0);
            }
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        @SuppressWarnings("unchecked")
        Map<String, Object> task = new ObjectMapper().readValue(in.readLine(), Map.class);
        OUT.put("client kafka-clients " + org.apache.kafka.common.utils.AppInfoParser.getVersion()).put('\n').flush();
        Thread commands = new Thread(() -> {
            try {
                String line;
                while ((line = in.readLine()) != null) {
                    COMMANDS.add(line.trim());
                }
            } catch (java.io.IOException e) {
                // the run went away: as the end of stdin
            }
            COMMANDS.add(END);
        }, "commands");
        commands.setDaemon(true);
        commands.start();
        String result = run(task);
        emit();
        if (REPEATED > 0) {  // evidence in the client log; the outcome told is the first call's
            System.err.println("the client called back a second time for " + REPEATED + " send(s)");
        }
        OUT.put("result " + result).put('\n').flush();
        OUT.drain();
        System.exit(0);
    }

    @SuppressWarnings("unchecked")
    static Properties properties(Map<String, Object> settings, String bootstrap) {
        Properties props = new Properties();
        for (Map.Entry<String, Object> e : settings.entrySet()) {
            props.put(e.getKey(), String.valueOf(e.getValue()));
        }
        props.put("bootstrap.servers", bootstrap);
        props.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        props.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        return props;
    }

    @SuppressWarnings("unchecked")
    static int check(String json) {
        try {
            Map<String, Object> settings = new ObjectMapper().readValue(json, Map.class);
            for (String key : settings.keySet()) {  // the client only warns of a name it does not know
                if (!org.apache.kafka.clients.producer.ProducerConfig.configNames().contains(key)) {
                    out.println("refused ConfigException: Unknown producer configuration " + key);
                    out.flush();
                    return 1;
                }
            }
            var producer = new org.apache.kafka.clients.producer.KafkaProducer<byte[], byte[]>(
                    properties(settings, NOWHERE));
            producer.close(Duration.ZERO);
        } catch (Exception e) {
            out.println("refused " + words(e));
            out.flush();
            return 1;
        }
        out.println("ok");
        out.flush();
        return 0;
    }

    static String name(Throwable e) {
        return e.getClass().getSimpleName();
    }

    /** What send() threw, unwrapped: once the client holds an error, send() throws a KafkaException or an
     *  IllegalStateException around it. */
    static Throwable why(Throwable e) {
        boolean wrapper = e.getClass() == org.apache.kafka.common.KafkaException.class
                || e.getClass() == IllegalStateException.class;
        return wrapper && e.getCause() != null ? e.getCause() : e;
    }

    /** The producer's fatal error when it holds one (it can send no more), else null. kafka-clients keeps it in
     *  its transaction manager (idempotent and transactional producers), which it does not expose: read by
     *  reflection; null on a version whose insides differ. */
    static RuntimeException fatalError(org.apache.kafka.clients.producer.KafkaProducer<?, ?> producer) {
        try {
            java.lang.reflect.Field field = producer.getClass().getDeclaredField("transactionManager");
            field.setAccessible(true);
            Object manager = field.get(producer);
            if (manager == null) {
                return null;
            }
            java.lang.reflect.Method has = manager.getClass().getDeclaredMethod("hasFatalError");
            has.setAccessible(true);
            if (!(Boolean) has.invoke(manager)) {
                return null;
            }
            java.lang.reflect.Method last = manager.getClass().getDeclaredMethod("lastError");
            last.setAccessible(true);
            return (RuntimeException) last.invoke(manager);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** Fatal by KafkaProducer's documentation (its transactional methods: "fatal error indicating ..."): the
     *  producer can only be closed. Asked besides fatalError(): the client fails a transactional call's result
     *  before it records its fatal state (TxnRequestHandler.fatalError: result.fail, then transitionToFatalError),
     *  so the caller can catch a ProducerFencedException while hasFatalError() is still false (seen in CI, once). */
    static boolean fatalKind(Throwable e) {
        return e instanceof org.apache.kafka.common.errors.ProducerFencedException
                || e instanceof org.apache.kafka.common.errors.AuthorizationException
                || e instanceof org.apache.kafka.common.errors.UnsupportedVersionException;
    }

    static String said(Throwable e) {
        String text = e.getMessage() == null ? "" : e.getMessage().replaceAll("\\s+", " ").trim();
        return text.isEmpty() ? name(e) : text;
    }

    static String words(Throwable e) {
        String text = said(e);
        return text.equals(name(e)) ? text : name(e) + ": " + text;
    }

    static final int[] TAKEN = new int[1];
    /** While it sends, the child writes its lines at most this often (and at every step the run waits for): one
     *  frame of ~16,000 acks at a million sends a second, where one per chunk cost the run a wake-up and a frame's
     *  fixed handling per 1,024 sends (most of the run's CPU while a Java child sends: bench/clients.py). */
    static final long EMIT_EVERY_NS = 20_000_000L;
    static long emitted = 0;  // System.nanoTime() of the last emit()

    static void emit() {
        emit(sink);
    }

    /** The lines so far, written: the others in order, then those of the sends `of` saw fail, then its
     *  acknowledgements as one `B` frame (a chunk's line is queued before its sends, so it precedes their acks;
     *  the acks' order does not matter): the Acks triples as they are, little-endian, so neither side formats or
     *  parses a number per send. */
    static void emit(Sink of) {
        String line;
        while ((line = LINES.poll()) != null) {
            OUT.put(line).put('\n');
        }
        Failed failed;
        while ((failed = of.failed.poll()) != null) {
            if (of.first(failed.index())) {
                OUT.put(failed.line()).put('\n');
            }
        }
        long[] acks = of.acks.take(TAKEN);
        int told = 0;  // the acks told now, moved to acks[0, told): all but those of sends told before
        for (int j = 0; j < TAKEN[0]; j += 3) {
            if (of.first(acks[j])) {
                ACKED.set((int) acks[j]);
                if (told != j) {
                    System.arraycopy(acks, j, acks, told, 3);
                }
                told += 3;
            }
        }
        if (told > 0) {
            OUT.put("B ").put(told / 3).put('\n').putLongs(acks, told);
        }
        for (Failed refused : of.refused) {  // after its callbacks' reports: told refused only if never called back
            if (of.first(refused.index())) {
                OUT.put(refused.line()).put('\n');
            }
        }
        of.refused.clear();
        if (told > 0 && !firstAckLogged) {
            firstAckLogged = true;
            System.err.println("first send acknowledged (" + acks[1] + " at partition " + acks[0] % partitions + ")");
        }
        OUT.flush();
        emitted = System.nanoTime();
    }

    static String ms(long t0) {
        return String.format(java.util.Locale.ROOT, "%.3f", (System.nanoTime() - t0) / 1e6);
    }

    static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    /** What a transactional task asks (null: the plain producer): transactions of `size` messages, those in
     *  `aborts` aborted on purpose; the plan covers transactions 0 .. planned-1. */
    record Transactions(long size, java.util.Set<Long> aborts, long planned) {
    }

    /** The workload's state between its steps: how far it got and, once something ended it, why. */
    static final class State {
        long handed = 0;
        String error = "";
        String fatal = "";
        long txn = -1;  // the open transaction, -1: none
        long txnSends = 0;
        Report refused = null;  // the send whose send() threw, if one did
        String refusedAs = "";

        /** The workload ends with what `e` says; a fatal error the client holds is named instead, and `e` is
         *  one when its kind is fatal by the client's documentation even if the client does not hold it yet. */
        void failed(Throwable e, org.apache.kafka.clients.producer.KafkaProducer<?, ?> producer) {
            RuntimeException held = fatalError(producer);
            Throwable x = held != null ? held : why(e);
            error = held != null || fatalKind(x) ? "fatal error: " + said(x) : said(x);
            fatal = name(x);
        }
    }

    static void ended(long txn, String outcome, String cause, String error, long sends) {
        LINES.add("t " + txn + " " + outcome + " " + cause + " " + error + " " + sends + " "
                + System.currentTimeMillis());
    }

    @SuppressWarnings("unchecked")
    static String run(Map<String, Object> task) throws Exception {
        long t0 = System.nanoTime();
        String topic = (String) task.get("topic");
        int parts = ((Number) task.get("partitions")).intValue();
        partitions = parts;
        workloadTopic = topic;
        long n = ((Number) task.get("messages")).longValue();
        Number rateGiven = (Number) task.get("rate");
        double rate = rateGiven == null ? 0 : rateGiven.doubleValue();
        int chunk = ((Number) task.get("chunk")).intValue();
        double flushTimeout = ((Number) task.get("flush_timeout")).doubleValue();
        Properties props = properties((Map<String, Object>) task.get("settings"), (String) task.get("bootstrap"));
        Map<String, Object> txns = (Map<String, Object>) task.get("transactions");
        Transactions tx = null;
        if (txns != null) {
            java.util.Set<Long> aborts = new java.util.HashSet<>();
            for (Object k : (java.util.List<Object>) txns.get("aborts")) {
                aborts.add(((Number) k).longValue());
            }
            tx = new Transactions(((Number) txns.get("size")).longValue(), aborts,
                    ((Number) txns.get("planned")).longValue());
        }
        State st = new State();
        try {
            producer = new org.apache.kafka.clients.producer.KafkaProducer<>(props);
        } catch (Exception e) {
            return result(0, said(e), name(e), t0);
        }
        try {  // connected, the topic's partitions known: sending starts at once on `go` (waits up to max.block.ms)
            if (tx != null) {
                producer.initTransactions();
            }
            producer.partitionsFor(topic);
        } catch (Exception e) {
            producer.close(Duration.ZERO);
            return result(0, said(why(e)), name(why(e)), t0);
        }
        boolean clean = false;
        try {
            if (!answer("ready", "go", null)) {
                return result(0, st.error, st.fatal, t0);
            }
            going = true;
            t0 = System.nanoTime();
            long count = 0;
            if (tx != null) {
                transactions(tx, n, chunk, rate, t0, topic, parts, props, flushTimeout, st);
                count = st.handed;
            }
            outer:
            while (tx == null && count < n) {
                if (count > 0 && !between(count, count, rate, t0, st,
                        command -> plainCommand(command, st.handed, props, topic, parts, flushTimeout, st))) {
                    break;
                }
                if (count % chunk == 0) {  // one chunk line per `chunk` messages: the run times them by it
                    LINES.add("chunk " + System.currentTimeMillis());
                }
                long end = Math.min(n, (count / chunk + 1) * chunk);
                for (long i = count; i < end; i++) {
                    if (!send(i, topic, parts, st)) {
                        count = st.handed = i + 1;
                        break outer;
                    }
                }
                count = st.handed = end;
            }
            if (st.txn >= 0) {  // stopped, or failed, inside a transaction it never asked to commit
                ended(st.txn, "aborted", STOP.get() && st.error.isEmpty() ? "interrupted" : "error",
                        st.fatal.isEmpty() ? "-" : st.fatal, st.txnSends);
            }
            LINES.add("sent " + count);
            long handed = count;
            boolean transactional = tx != null;
            if (zombie != null && !STOP.get()) {  // the workload ended while an instance was paused: it resumes now
                resumeAny(transactional, flushTimeout, true);
            }
            Serve serve = transactional ? command -> transactionalCommand(command, props, flushTimeout, st)
                    : command -> plainCommand(command, handed, props, topic, parts, flushTimeout, st);
            clean = answer("handed", "flush", serve) && st.error.isEmpty()
                    && (zombie == null || resumeAny(transactional, flushTimeout, true))
                    && flushed(producer, flushTimeout, true);
        } finally {
            // Everything acknowledged: the client is left to the exit (its close, tens of ms, is no part of the
            // workload). Else close(ZERO) fails what is still out at once, each through its callback.
            if (!clean) {
                producer.close(Duration.ZERO);
            }
            if (zombie != null) {  // stopped while an instance was paused: what it was told is said now
                resumeAny(tx != null, 0, false);
            }
        }
        if (st.refused != null) {  // told refused at the last emit() unless the client called it back
            st.refused.refused(st.refusedAs);
        }
        RuntimeException fatalAtEnd = st.error.isEmpty() ? fatalError(producer) : null;  // e.g. during the flush
        if (fatalAtEnd != null) {
            st.failed(fatalAtEnd, producer);
        }
        return result(st.handed, st.error, st.fatal, t0);
    }

    /** Message i handed to the producer now (partition i % parts, value i / parts); false: send() refused it (st
     *  says so; it is told once the client is closed, unless the client called back). */
    static boolean send(long i, String topic, int parts, State st) {
        Report report = new Report(i, System.nanoTime(), sink);
        try {
            producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>(topic, (int) (i % parts), null,
                    Long.toString(i / parts).getBytes(StandardCharsets.US_ASCII)), report);
            return true;
        } catch (Exception e) {
            st.refused = report;
            st.refusedAs = name(why(e));
            st.failed(e, producer);
            return false;
        }
    }

    /** Serves one of the run's commands while the workload sends (restart, pause, resume); false: it could not
     *  (st says why), or the command is none it serves: the workload ends. */
    interface Serve {
        boolean run(String command) throws Exception;
    }

    static boolean plainCommand(String command, long count, Properties props, String topic, int parts,
                                double flushTimeout, State st) throws Exception {
        switch (command) {
            case "restart":
                return restart(count, props, topic, parts, st);
            case "pause":
                return pause(count, props, topic, parts, st);
            case "resume":
                return resume(flushTimeout);
            default:
                return false;
        }
    }

    /** Between two pieces of the workload (`sent`: fresh messages handed, `sends`: sends handed, resends too):
     *  the lines written when due, then a stop, the run's command (served by `serve`; null: every command waits
     *  for a later step), a fatal error the client holds, the pace. false: the workload ends here (STOP, or st,
     *  says why). */
    static boolean between(long sent, long sends, double rate, long t0, State st, Serve serve) throws Exception {
        if (System.nanoTime() - emitted >= EMIT_EVERY_NS) {
            LINES.add("sent " + sent);
            emit();
        }
        if (STOP.get()) {
            return false;
        }
        String command = COMMANDS.peek();
        if (command != null && (serve != null || command.equals(END))) {  // null: served at a later step
            COMMANDS.poll();
            if (serve == null || !serve.run(command)) {
                STOP.set(st.error.isEmpty());  // the end of stdin, or a line it cannot serve: stopping
                return false;
            }
        }
        RuntimeException fatalNow = failedSend ? fatalError(producer) : null;
        if (fatalNow != null) {
            st.failed(fatalNow, producer);
            return false;
        }
        if (rate > 0) {
            long ahead = (long) ((sends / rate) * 1e9) - (System.nanoTime() - t0);
            if (ahead > 0) {
                Thread.sleep(ahead / 1_000_000, (int) (ahead % 1_000_000));
            }
        }
        return true;
    }

    /** A transaction: the messages a restart took from an earlier one (`again`, handed first), then the fresh
     *  messages lo..hi-1; `handed` of them so far, in that order. */
    static final class Txn {
        final long number, lo, hi;
        final long[] again;
        int handed;

        Txn(long number, long[] again, long lo, long hi) {
            this.number = number;
            this.again = again;
            this.lo = lo;
            this.hi = hi;
        }

        int size() {
            return again.length + (int) (hi - lo);
        }

        long at(int k) {
            return k < again.length ? again[k] : lo + k - again.length;
        }

        /** The first fresh message not handed yet. */
        long freshHanded() {
            return lo + Math.max(0, handed - again.length);
        }
    }

    /** The open transaction (null: none), the messages a restart took from theirs and not sent again yet
     *  (ascending), and the fresh messages given to transactions so far. */
    static Txn open = null;
    static final java.util.TreeSet<Long> PENDING = new java.util.TreeSet<>();
    static long fresh = 0;

    /** The transactional workload, as transactional.py's: transaction K's `b` line names its messages, the
     *  messages a restart took from their transaction first (sent again, in this session), then fresh ones, `size`
     *  in all; K is committed, or aborted as the plan says. A restart is served between two of its sends (its
     *  pieces are of `block` sends, as transactional.py's, so that one comes inside every transaction; one asked
     *  while a transaction ends waits for the next): it closes the instance at once, the transaction is aborted
     *  (the new instance's initTransactions aborts what the old one left open), and its messages are sent again
     *  first thing in the next transactions. st.handed: fresh messages handed. */
    static void transactions(Transactions tx, long n, int chunk, double rate, long t0, String topic, int parts,
                             Properties props, double flushTimeout, State st) throws Exception {
        long number = 0, sends = 0, chunks = 0;  // chunks: the chunk lines said (fresh message i's is the i/chunk th)
        int block = (int) Math.max(1, Math.min(64, tx.size() / 2));  // sends between two looks at a restart
        Serve serve = command -> transactionalCommand(command, props, flushTimeout, st);
        outer:
        while (!PENDING.isEmpty() || fresh < n) {
            if (number >= tx.planned()) {
                st.error = "the plan of aborts covers " + tx.planned() + " transactions, and restarts made more";
                break;
            }
            if (number > 0 && !between(st.handed, sends, rate, t0, st, null)) {
                break;
            }
            try {
                producer.beginTransaction();
            } catch (Exception e) {
                st.failed(e, producer);
                break;
            }
            long[] again = new long[(int) Math.min(tx.size(), PENDING.size())];
            for (int j = 0; j < again.length; j++) {
                again[j] = PENDING.pollFirst();
            }
            long more = Math.min(tx.size() - again.length, n - fresh);
            Txn t = open = new Txn(number++, again, fresh, fresh + more);
            fresh += more;
            StringBuilder line = new StringBuilder("b ").append(t.number).append(' ').append(t.lo).append(' ')
                    .append(t.hi);
            for (long i : again) {
                line.append(' ').append(i);
            }
            LINES.add(line.toString());
            st.txn = t.number;
            st.txnSends = 0;
            while (t.handed < t.size()) {
                if (t.handed > 0) {
                    if (!between(st.handed, sends, rate, t0, st, serve)) {
                        break outer;
                    }
                    if (open != t) {  // a restart or a pause took it
                        continue outer;
                    }
                }
                int end = Math.min(t.size(), t.handed + block);
                for (int j = t.handed; j < end; j++) {
                    long i = t.at(j);
                    while (j >= again.length && i / chunk >= chunks) {  // the run times fresh sends by these
                        LINES.add("chunk " + System.currentTimeMillis());
                        chunks++;
                    }
                    if (!send(i, topic, parts, st)) {
                        st.txnSends += j + 1 - t.handed;
                        t.handed = j + 1;
                        st.handed = Math.max(st.handed, t.freshHanded());
                        break outer;
                    }
                }
                sends += end - t.handed;
                st.txnSends += end - t.handed;
                t.handed = end;
                st.handed = Math.max(st.handed, t.freshHanded());
            }
            open = null;
            st.txn = -1;
            if (!endTransaction(producer, t.number, st.txnSends, tx.aborts().contains(t.number), flushTimeout, st)) {
                break;
            }
        }
    }

    /** producer-restart of a transactional instance: closed at once (what it had out fails through the
     *  callbacks), its open transaction aborted (told: cause restart) and its messages kept to be sent again; a
     *  new instance (session) initialises its transactions, which fences the old one and aborts what it left open.
     *  Its `s` line gives the fresh messages the old session handed and where the new one's start. false: the new
     *  instance could not start its transactions (st says why). */
    static boolean restartTransactional(Properties props, double flushTimeout, State st) throws Exception {
        Txn t = open;
        producer.close(Duration.ZERO);
        emit();
        long handedFresh = fresh;
        if (t != null) {
            ended(t.number, "aborted", "restart", "-", st.txnSends);
            for (int j = 0; j < t.size(); j++) {
                PENDING.add(t.at(j));
            }
            handedFresh = t.freshHanded();
            open = null;
            st.txn = -1;
        }
        return newTransactional("s", handedFresh, props, flushTimeout, st);
    }

    /** A new transactional instance (session), said by the line `word K N F` (the last session handed fresh
     *  messages up to N, this one hands fresh ones from F), initialises its transactions: that fences the
     *  instance before it and aborts what that one left open. false: it could not (st says why). */
    static boolean newTransactional(String word, long handedFresh, Properties props, double flushTimeout, State st)
            throws Exception {
        session++;
        sink = new Sink();
        producer = new org.apache.kafka.clients.producer.KafkaProducer<>(props);
        LINES.add(word + " " + session + " " + handedFresh + " " + fresh);
        System.err.println("producer " + (word.equals("p") ? "paused" : "restarted") + ": session " + session
                + ", fresh messages from " + fresh);
        long deadline = System.nanoTime() + (long) (flushTimeout * 1e9);
        while (true) {
            try {
                producer.initTransactions();
                return true;
            } catch (org.apache.kafka.common.errors.TimeoutException e) {  // resumed: the client carries on with it
                if (System.nanoTime() > deadline || STOP.get()) {
                    st.failed(e, producer);
                    return false;
                }
            } catch (Exception e) {
                st.failed(e, producer);
                return false;
            }
        }
    }

    /** The run's commands to a transactional child (restart, pause, resume); false: it could not serve it. */
    static boolean transactionalCommand(String command, Properties props, double flushTimeout, State st)
            throws Exception {
        switch (command) {
            case "restart":
                return restartTransactional(props, flushTimeout, st);
            case "pause":
                return pauseTransactional(props, flushTimeout, st);
            case "resume":
                return resumeTransactional(flushTimeout, true);
            default:
                return false;
        }
    }

    /** A paused transactional instance's open transaction (null: none) and where its own rest starts. */
    static Txn zombieTxn = null;
    static int zombieFrom = 0;

    /** producer-pause of a transactional instance, as transactional.py's: the instance is left as it is with its
     *  open transaction; what it had handed of it (and the resends it had not handed yet) goes to its successor,
     *  to be sent again first thing in the next transactions; the rest of its fresh messages stays its own, to
     *  send when it resumes (resumeTransactional). The successor's initTransactions fences it (line `p K N F`). */
    static boolean pauseTransactional(Properties props, double flushTimeout, State st) throws Exception {
        if (zombie != null) {
            st.error = "producer-pause: the paused producer has not resumed yet (one pause at a time)";
            return false;
        }
        emit();
        Txn t = open;
        zombie = producer;
        zombieSink = sink;
        zombieSession = session;
        zombieTxn = t;
        long handedFresh = fresh;
        if (t != null) {
            zombieFrom = Math.max(t.handed, t.again.length);
            for (int j = 0; j < zombieFrom; j++) {
                PENDING.add(t.at(j));
            }
            handedFresh = t.freshHanded();
            open = null;
            st.txn = -1;
        }
        return newTransactional("p", handedFresh, props, flushTimeout, st);
    }

    /** The paused transactional instance resumes, as a zombie: it hands the rest of its transaction (line
     *  `late LO HI`; a send() the fenced client refuses is an `r` line) and asks to commit it (unless `finish` is
     *  false: the child is stopping), then is closed; its transaction is told fenced, committed if the commit
     *  returned (the broker let a fenced instance commit), else aborted. Its lines are said in its session, between
     *  `z J` and `z -`; a `z -` alone when none is paused. */
    static boolean resumeTransactional(double flushTimeout, boolean finish) throws Exception {
        if (zombie == null) {
            LINES.add("z -");
            emit();
            return true;
        }
        Txn t = zombieTxn;
        int sends = t == null ? 0 : t.handed;
        String outcome = "aborted", error = "-";
        java.util.List<Report> refused = new java.util.ArrayList<>();
        java.util.List<String> refusedAs = new java.util.ArrayList<>();
        if (t != null && finish) {
            for (int j = zombieFrom; j < t.size(); j++, sends++) {
                long i = t.at(j);
                Report report = new Report(i, System.nanoTime(), zombieSink);
                try {
                    zombie.send(new org.apache.kafka.clients.producer.ProducerRecord<>(workloadTopic, (int) (i % partitions),
                            null, Long.toString(i / partitions).getBytes(StandardCharsets.US_ASCII)), report);
                } catch (Exception e) {  // the fenced client may refuse at once
                    refused.add(report);
                    refusedAs.add(name(why(e)));
                }
            }
            Throwable[] raised = new Throwable[1];
            var commit = zombie;
            if (within(commit::commitTransaction, "zombie-commit", flushTimeout, raised) && raised[0] == null) {
                outcome = "committed";
            } else {
                error = raised[0] != null ? name(why(raised[0])) : STOP.get() ? "-" : "TimeoutException";
                if (raised[0] != null && !STOP.get() && fatalError(commit) == null && !fatalKind(why(raised[0]))) {
                    zombieAbort(commit, flushTimeout);
                }
            }
        }
        zombie.close(Duration.ZERO);  // what is still out fails through its callbacks, all done on return
        emit();
        for (int k = 0; k < refused.size(); k++) {  // told refused inside the z block unless called back
            refused.get(k).refused(refusedAs.get(k));
        }
        LINES.add("z " + zombieSession);
        if (t != null) {
            if (finish && zombieFrom < t.size()) {
                LINES.add("late " + t.at(zombieFrom) + " " + t.hi);
            }
            ended(t.number, outcome, "fenced", error, sends);
        }
        emit(zombieSink);
        System.err.println("session " + zombieSession + " resumed and closed"
                + (t == null ? "" : ": its transaction " + t.number + " " + outcome));
        zombie = null;
        zombieSink = null;
        zombieTxn = null;
        LINES.add("z -");
        emit();
        return true;
    }

    /** The zombie aborts its transaction after a commit that failed with an error it can abort, as KafkaProducer's
     *  documentation tells an application to (and as the current instance does: endTransaction). With transaction
     *  version 1 the client may first bump its epoch, with the zombie's stale one: what such a bump did to the
     *  successor on Kafka 4.1.0 is experiments/known-bugs/kafka-python-zombie-bump.md. Its transaction is told
     *  aborted, fenced, either way (the successor's start aborted it); how the abort ended goes to the log. */
    static void zombieAbort(org.apache.kafka.clients.producer.KafkaProducer<?, ?> zombie, double flushTimeout)
            throws Exception {
        Throwable[] raised = new Throwable[1];
        boolean ended = within(zombie::abortTransaction, "zombie-abort", flushTimeout, raised);
        System.err.println("session " + zombieSession + ": abortTransaction() after the failed commit: "
                + (raised[0] != null ? words(why(raised[0])) : ended ? "returned" : "no answer in time"));
    }

    /** Commit transaction `txn`, or flush (its records written: read_committed must leave them out) and abort it as
     *  planned; its `t` line says how it ended. A commit that fails is aborted when the client can (an abortable
     *  error: definitely not committed), else unknown. A commit that times out is asked again (the client resumes
     *  it) until flush_timeout. false: the workload cannot go on (st says why). */
    static boolean endTransaction(org.apache.kafka.clients.producer.KafkaProducer<?, ?> producer, long txn, long sends,
                                  boolean planned, double flushTimeout, State st) {
        if (planned) {
            producer.flush();
            try {
                producer.abortTransaction();
                ended(txn, "aborted", "planned", "-", sends);
                return true;
            } catch (Exception e) {
                ended(txn, "aborted", "planned", name(why(e)), sends);
                st.failed(e, producer);
                return false;
            }
        }
        long deadline = System.nanoTime() + (long) (flushTimeout * 1e9);
        while (true) {
            try {
                producer.commitTransaction();
                ended(txn, "committed", "-", "-", sends);
                return true;
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                if (System.nanoTime() < deadline && !STOP.get()) {
                    continue;
                }
                ended(txn, "unknown", STOP.get() ? "interrupted" : "error", name(e), sends);
                st.failed(e, producer);
                return false;
            } catch (Exception e) {
                String failed = name(why(e));
                if (fatalError(producer) == null && !fatalKind(why(e))) {
                    try {
                        producer.abortTransaction();
                        ended(txn, "aborted", "error", failed, sends);
                        return true;
                    } catch (Exception e2) {
                        st.failed(e2, producer);
                    }
                } else {
                    st.failed(e, producer);
                }
                ended(txn, "unknown", "error", failed, sends);
                return false;
            }
        }
    }

    /** Every send handed has its outcome within `timeout` s (flush() itself takes no timeout), unless stopped. */
    /** tell: the current instance's lines are written as they come while it flushes (as while it sends), not in
     *  one frame once it has flushed; only where the current session's lines may come (not inside a `z` block). */
    static boolean flushed(org.apache.kafka.clients.producer.KafkaProducer<?, ?> producer, double timeout,
                           boolean tell) throws Exception {
        return within(producer::flush, "flush", timeout, new Throwable[1], tell);
    }

    static boolean within(Runnable call, String name, double timeout, Throwable[] raised) throws Exception {
        return within(call, name, timeout, raised, false);
    }

    /** call, on a thread of its own, waited for up to `timeout` s unless stopped (a SIGTERM cuts the wait short);
     *  what it threw in raised[0]. false: it had not returned. tell: emit() as due while waiting. */
    static boolean within(Runnable call, String name, double timeout, Throwable[] raised, boolean tell)
            throws Exception {
        Thread thread = new Thread(() -> {
            try {
                call.run();
            } catch (Throwable e) {
                raised[0] = e;
            }
        }, name);
        thread.setDaemon(true);
        thread.start();
        long deadline = System.nanoTime() + (long) (timeout * 1e9);
        while (thread.isAlive() && !STOP.get() && System.nanoTime() < deadline) {
            thread.join(tell ? EMIT_EVERY_NS / 1_000_000 : 50);
            if (tell && System.nanoTime() - emitted >= EMIT_EVERY_NS) {
                emit();
            }
        }
        return !thread.isAlive();  // its end (isAlive false) makes raised[0] visible here
    }

    /** Say `say` (ready, handed) and wait for the run's `expect` (go, flush), serving its other commands meanwhile
     *  with `serve` (null: none can come); false: the run is stopping. */
    static boolean answer(String say, String expect, Serve serve) throws Exception {
        if (STOP.get()) {
            return false;
        }
        LINES.add(say);
        emit();
        String line;
        while (!(line = COMMANDS.take()).equals(expect) && !line.equals(END) && serve != null) {
            if (!serve.run(line)) {
                STOP.set(true);
                break;
            }
        }
        if (!line.equals(expect)) {
            STOP.set(true);
        }
        return !STOP.get();
    }

    /** producer-restart: the instance is closed without flushing (close(ZERO) fails what is queued or in flight,
     *  each through its callback, and joins the I/O thread: every callback of it is done on return), its lines
     *  written, and a new instance hands again, in index order, every message below `count` that was not
     *  acknowledged. false: a send was refused (st says which), and the workload ends. */
    static boolean restart(long count, Properties props, String topic, int parts, State st) throws Exception {
        producer.close(Duration.ZERO);
        emit();
        return replace("s", count, props, topic, parts, st);
    }

    /** A paused instance (producer-pause), its sink and session, until it resumes. */
    static org.apache.kafka.clients.producer.KafkaProducer<byte[], byte[]> zombie = null;
    static Sink zombieSink = null;
    static long zombieSession = -1;

    /** producer-pause: the instance is left as it is (its I/O thread goes on sending what it holds, as
     *  librdkafka's threads do when the application stops calling it), its callbacks' reports held (its Sink);
     *  a new instance takes over as after a restart (its line `p`). One pause at a time. */
    static boolean pause(long count, Properties props, String topic, int parts, State st) throws Exception {
        if (zombie != null) {
            st.error = "producer-pause: the paused producer has not resumed yet (one pause at a time)";
            return false;
        }
        emit();
        zombie = producer;
        zombieSink = sink;
        zombieSession = session;
        return replace("p", count, props, topic, parts, st);
    }

    /** The paused instance resumes: what it had queued or in flight completes (or fails, after flush_timeout), and
     *  what it was told is said in its own session, between `z J` and `z -`; a `z -` alone when none is paused. */
    static boolean resume(double flushTimeout) throws Exception {
        if (zombie != null) {
            flushed(zombie, flushTimeout, false);
            zombie.close(Duration.ZERO);  // what is still out fails through its callbacks, all done on return
            emit();
            LINES.add("z " + zombieSession);
            emit(zombieSink);
            System.err.println("session " + zombieSession + " resumed and closed");
            zombie = null;
            zombieSink = null;
        }
        LINES.add("z -");
        emit();
        return true;
    }

    /** The paused instance resumes (finish false: the child is stopping, it only tells what it has). */
    static boolean resumeAny(boolean transactional, double flushTimeout, boolean finish) throws Exception {
        return transactional ? resumeTransactional(flushTimeout, finish) : resume(flushTimeout);
    }

    /** A new instance (session) with its own sink, said by the line `word K count`, hands again, in index order,
     *  every message below `count` that was not acknowledged. false: a send was refused (st says which). */
    static boolean replace(String word, long count, Properties props, String topic, int parts, State st)
            throws Exception {
        session++;
        sink = new Sink();
        producer = new org.apache.kafka.clients.producer.KafkaProducer<>(props);
        LINES.add(word + " " + session + " " + count);
        System.err.println("producer " + (word.equals("p") ? "paused" : "restarted") + ": session " + session
                + " after " + count + " messages");
        for (int i = ACKED.nextClearBit(0); i < count; i = ACKED.nextClearBit(i + 1)) {
            if (!send(i, topic, parts, st)) {
                return false;
            }
        }
        emit();
        return true;
    }

    static String result(long handed, String error, String fatal, long t0) {
        return "{\"handed\": " + handed + ", \"interrupted\": " + STOP.get() + ", \"error\": " + json(error)
                + ", \"fatal\": " + json(fatal) + ", \"duration\": "
                + String.format(java.util.Locale.ROOT, "%.3f", (System.nanoTime() - t0) / 1e9) + "}";
    }
}
