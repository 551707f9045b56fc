// One member of the consumer group with Apache Kafka's Java client (kafka-clients' KafkaConsumer), as its own process
// (so a fault's SIGKILL, SIGSTOP and SIGCONT reach the client itself). Compiled once with ChaosProducer.java (its
// header says how), then run with a Kafka distribution's jars (Java 17 or later; CP as there):
//
//     java -cp CP ChaosMember               the member: its task as JSON in $KAFKA_CHAOS_MEMBER
//     java -cp CP ChaosMember --check JSON  builds the consumer with those settings (Java property names),
//                                           connecting nowhere: `ok`, or `refused WORDS` (the client's words)
//
// It does what harness/workload/member.py does with librdkafka, for the strategies commit-after (process the batch,
// a row per record as each is done, then commitSync its offsets), commit-before (commitSync, then process; a failed
// commit drops the batch), auto-commit (the client commits what poll() returned, in the background of poll()) and
// transactional (consume-transform-produce: the batch's output records and its offsets in one transaction of a
// KafkaProducer with the slot's transactional.id; an abortable failure aborts it and goes back to the committed
// offsets) and idempotent-sink (no Kafka commit: the batch's output, rows and next offsets in one transaction of the
// sink; on assignment it seeks to the offsets the sink stored, and where the sink fenced a batch, to the stored one).
// It cannot open the sink (no SQLite driver): each sink action is one line on stdout, written whole and before the
// commit that follows it, which the harness applies to the sink (workload/memberlines.py has the protocol); what
// idempotent-sink reads back, the harness answers on stdin, one line per request, which the member waits for.
// A batch is one poll (max.poll.records = the batch); processing a record takes processing_ms (slept).
// SIGTERM stops it after the batch in hand (the strategy's commit, then close: leaving the group): exit 0. Exit 2:
// the broker lacks the group protocol (UnsupportedVersionException); 4: any other error from the client, or no
// answer from the harness (idempotent-sink: NoAnswer).
// The client's own log (log4j, WARN) goes to stderr, which the harness keeps as the member's log.
// A client call given a timeout (max.block.ms, default.api.timeout.ms) that has not returned GRACE_S past it, in the
// member's running time, is the client hanging: a watchdog thread says so (a `hung` event naming the call, every
// thread's stack in the log), as member.py's does, and the harness reports the member's kill as the client's hang.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.errors.WakeupException;

public class ChaosMember {
    static final int STOPPED = 0, UNSUPPORTED = 2, FATAL = 4;
    static final FileOutputStream OUT = new FileOutputStream(FileDescriptor.out);
    static volatile boolean stopping = false;
    static volatile KafkaConsumer<byte[], byte[]> consumer;
    // idempotent-sink: the harness's answers (stdin), read by a thread of their own; END when stdin ended
    static final BlockingQueue<String> ANSWERS = new LinkedBlockingQueue<>();
    static final String END = new String("end of stdin");
    static final long ANSWER_TIMEOUT_MS = 120_000;

    final String name, topic, strategy, output, transactionalId;
    final double processingMs;
    KafkaProducer<byte[], byte[]> producer;  // transactional only
    int session = 0;  // a new one at every assignment change and every seek the member makes itself
    long n = 0;  // the member's processing counter
    RuntimeException broken;  // a failure inside the rebalance listener (no answer), raised after its poll()
    long maxBlockMs = 60_000, apiTimeoutMs = 60_000;  // the producer's and the consumer's bounds on a call

    /** The client call in progress (a new object per call), for the watchdog. */
    record Call(String name, long timeoutMs) {
    }

    static volatile Call calling;
    static final long GRACE_S = 30;

    static <T> T watched(String name, long timeoutMs, java.util.function.Supplier<T> call) {
        calling = new Call(name, timeoutMs);
        try {
            return call.get();
        } finally {
            calling = null;
        }
    }

    static void watchedRun(String name, long timeoutMs, Runnable call) {
        watched(name, timeoutMs, () -> {
            call.run();
            return null;
        });
    }

    /** member.py's Watch: the call's time is this thread's own ticks, counted only while the member runs (a
     *  SIGSTOPped member's pause is not its client taking time); a hang is said once per call. */
    void watch() {
        Call seen = null, told = null;
        long waited = 0;
        while (true) {
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                return;
            }
            Call c = calling;
            if (c != seen) {
                seen = c;
                waited = 0;
            } else if (c != null) {
                waited++;
            }
            if (c != null && c != told && waited > c.timeoutMs() / 1000 + GRACE_S) {
                told = c;
                String said = c.name() + " has not returned after " + waited + " s (its timeout " + c.timeoutMs() / 1000
                        + " s)";
                event("hung", null, said);
                System.err.println("member " + name + ": the client hangs: " + said);
                Thread.getAllStackTraces().forEach((thread, stack) -> {
                    System.err.println(thread);
                    for (StackTraceElement frame : stack) {
                        System.err.println("    at " + frame);
                    }
                });
            }
        }
    }

    ChaosMember(Map<String, Object> task) {
        name = (String) task.get("member");
        topic = (String) task.get("topic");
        strategy = (String) task.get("strategy");
        output = (String) task.get("output");
        transactionalId = (String) task.get("transactional_id");
        processingMs = ((Number) task.get("processing_ms")).doubleValue();
    }

    /** One line of the protocol, in one write(2): the harness never sees half of it. */
    static void say(String line) {
        byte[] bytes = (line + "\n").getBytes(StandardCharsets.US_ASCII);
        synchronized (OUT) {
            try {
                OUT.write(bytes);
            } catch (java.io.IOException e) {
                // the harness went away: the member is being stopped
            }
        }
    }

    static String now() {
        Instant t = Instant.now();
        return String.format(java.util.Locale.ROOT, "%.3f", t.getEpochSecond() * 1000.0 + t.getNano() / 1e6);
    }

    static String partitions(Collection<TopicPartition> parts) {
        StringBuilder b = new StringBuilder("[");
        parts.stream().map(TopicPartition::partition).sorted().forEach(p -> b.append(b.length() > 1 ? "," : "").append(p));
        return b.append(']').toString();
    }

    /** An event: `e AT EVENT PARTITIONS DETAIL` (partitions null: `-`), its detail on one line. */
    static void event(String event, Collection<TopicPartition> parts, String detail) {
        String oneLine = detail.replaceAll("[\\r\\n]+", " ").replaceAll("[^\\x20-\\x7e]", "?");
        if (oneLine.length() > 1000) {
            oneLine = oneLine.substring(0, 1000);
        }
        say("e " + now() + " " + event + " " + (parts == null ? "-" : partitions(parts)) + " " + oneLine);
    }

    static String words(Throwable e) {
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    /** A transaction's error that ends the member rather than aborting the transaction: those KafkaProducer's
     *  documentation calls fatal (fenced, out of order, not authorized; unsupported), and a timeout (the client
     *  forbids an abort after a commit that timed out; member.py raises a retriable commit error too). Any other
     *  KafkaException aborts, as that documentation tells an application to: InvalidProducerEpochException too, a
     *  produce that a retry sent with the epoch an earlier transaction's end had bumped, which the client holds as
     *  abortable (until 2026-11-30 it ended the member: an exploration of kafka-java-consumers.yaml met it after
     *  lost requests, a member exiting 4 and the try lost as an error). */
    static boolean endsMember(Throwable e) {
        return e instanceof org.apache.kafka.common.errors.ProducerFencedException
                || e instanceof org.apache.kafka.common.errors.OutOfOrderSequenceException
                || e instanceof org.apache.kafka.common.errors.AuthorizationException
                || e instanceof org.apache.kafka.common.errors.TimeoutException
                || e instanceof UnsupportedVersionException;
    }

    public static void main(String[] args) throws Exception {
        System.setOut(System.err);  // the protocol owns stdout; log4j's console goes to stderr
        System.setProperty("org.apache.logging.log4j.level",
                System.getenv().getOrDefault("KAFKA_CHAOS_JAVA_LOG", "WARN"));
        if (args.length > 1 && args[0].equals("--check")) {
            System.exit(check(args[1]));
        }
        if (args.length > 0 && args[0].equals("--ends")) {  // what a transaction's error of each class named does
            for (int i = 1; i < args.length; i++) {
                Throwable e = (Throwable) Class.forName(args[i]).getConstructor(String.class).newInstance("-");
                System.err.println(args[i] + (endsMember(e) ? " ends" : " aborts"));
            }
            return;
        }
        // SIGTERM: the loop stops after the batch in hand; wakeup() ends a poll() that waits.
        sun.misc.Signal.handle(new sun.misc.Signal("TERM"), sig -> {
            stopping = true;
            KafkaConsumer<byte[], byte[]> c = consumer;
            if (c != null) {
                c.wakeup();
            }
        });
        @SuppressWarnings("unchecked")
        Map<String, Object> task = new ObjectMapper().readValue(System.getenv("KAFKA_CHAOS_MEMBER"), Map.class);
        @SuppressWarnings("unchecked")
        int code = new ChaosMember(task).run(properties((Map<String, Object>) task.get("settings")));
        System.exit(code);
    }

    static Properties properties(Map<String, Object> settings) {
        Properties props = new Properties();
        for (Map.Entry<String, Object> e : settings.entrySet()) {
            props.put(e.getKey(), String.valueOf(e.getValue()));
        }
        return props;
    }

    @SuppressWarnings("unchecked")
    static int check(String json) {
        String said = "ok";
        try {
            Map<String, Object> settings = new ObjectMapper().readValue(json, Map.class);
            for (String key : settings.keySet()) {  // the client only warns of a name it does not know
                if (!ConsumerConfig.configNames().contains(key)) {
                    said = "refused ConfigException: Unknown consumer configuration " + key;
                }
            }
            if (said.equals("ok")) {
                settings.put("bootstrap.servers", "127.0.0.1:9");
                new KafkaConsumer<byte[], byte[]>(properties(settings)).close(Duration.ZERO);
            }
        } catch (Exception e) {
            said = "refused " + words(e).replaceAll("[\\r\\n]+", " ");
        }
        say(said);
        return said.equals("ok") ? 0 : 1;
    }

    int run(Properties props) {
        event("start", null, "pid " + ProcessHandle.current().pid());
        System.err.println("member " + name + ": kafka-clients " + org.apache.kafka.common.utils.AppInfoParser.getVersion()
                + ", group.protocol " + props.getProperty("group.protocol"));
        if (strategy.equals("idempotent-sink")) {
            listen();
        }
        apiTimeoutMs = Long.parseLong(props.getProperty("default.api.timeout.ms", "60000"));
        Thread watchdog = new Thread(this::watch, "watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        try {
            consumer = new KafkaConsumer<>(props);
            if (strategy.equals("transactional")) {  // as member.py's: init aborts what a predecessor left open
                Properties pp = producerProperties(props.getProperty("bootstrap.servers"));
                maxBlockMs = Long.parseLong(pp.getProperty("max.block.ms", "60000"));
                producer = new KafkaProducer<>(pp);
                watchedRun("initTransactions", maxBlockMs, producer::initTransactions);
            }
        } catch (Exception e) {
            return failed(e);
        }
        try {
            consumer.subscribe(List.of(topic), new Listener());
            while (!stopping) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException e) {
                    break;  // SIGTERM
                } catch (RetriableException e) {
                    System.err.println("member " + name + ": poll: " + words(e));
                    continue;
                }
                if (broken != null) {
                    throw broken;
                }
                if (records.isEmpty()) {
                    continue;
                }
                List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>(records.count());
                records.forEach(batch::add);
                if (strategy.equals("commit-after")) {
                    process(batch, "after");
                    commit(batch);
                } else if (strategy.equals("commit-before")) {
                    if (commit(batch)) {
                        process(batch, "before");
                    }
                } else if (strategy.equals("transactional")) {
                    transact(batch);
                } else if (strategy.equals("idempotent-sink")) {
                    idempotent(batch);
                } else {  // auto-commit
                    process(batch, "auto");
                }
            }
        } catch (Exception e) {
            return failed(e);
        }
        event("stop", null, "");
        try {
            if (producer != null) {
                producer.close(Duration.ofSeconds(10));
            }
            consumer.close();  // leaves the group (auto-commit commits what poll() returned)
        } catch (Exception e) {
            System.err.println("member " + name + ": close: " + words(e));
        }
        return STOPPED;
    }

    int failed(Throwable e) {
        boolean unsupported = e instanceof UnsupportedVersionException;
        event("error", null, words(e));
        System.err.println("member " + name + ": " + (unsupported ? "unsupported" : "fatal") + ": " + words(e));
        e.printStackTrace();
        return unsupported ? UNSUPPORTED : FATAL;
    }

    /** The application's work: a row per record into the sink as each is done (`p` lines), the batch first said
     *  in hand (`h`): a kill mid-batch leaves the records before it processed. */
    void process(List<ConsumerRecord<byte[], byte[]>> batch, String committed) throws InterruptedException {
        say("h " + n + " " + batch.size());
        long pause = (long) (processingMs * 1e6);
        for (ConsumerRecord<byte[], byte[]> m : batch) {
            if (pause > 0) {
                Thread.sleep(pause / 1_000_000, (int) (pause % 1_000_000));
            }
            say("p " + committed + " " + m.partition() + " " + m.offset() + " " + value(m.value()) + " " + session + " "
                    + n + " " + now());
            n++;
        }
    }

    static String value(byte[] raw) {
        if (raw == null || raw.length == 0 || raw.length > 18) {
            return "-";
        }
        for (byte b : raw) {
            if (b < '0' || b > '9') {
                return "-";
            }
        }
        return new String(raw, StandardCharsets.US_ASCII);
    }

    Properties producerProperties(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", transactionalId);
        p.put("transaction.timeout.ms", "20000");
        p.put("client.id", name);
        p.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        return p;
    }

    /** transactional: the batch processed (no sink row: the committed output is the record of what was processed,
     *  read after the run), its output records (key MEMBER:SESSION:N:AT, value PARTITION:OFFSET:VALUE, to the same
     *  partition of the output topic, as member.py writes them) and its next offsets in one transaction. An error
     *  the client can recover from aborts it (an `abort` event) and goes back to the group's committed offsets;
     *  one that endsMember() ends the member. */
    void transact(List<ConsumerRecord<byte[], byte[]>> batch) throws InterruptedException {
        List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>(batch.size());
        long pause = (long) (processingMs * 1e6);
        for (ConsumerRecord<byte[], byte[]> m : batch) {
            if (pause > 0) {
                Thread.sleep(pause / 1_000_000, (int) (pause % 1_000_000));
            }
            String v = value(m.value());
            out.add(new ProducerRecord<>(output, m.partition(),
                    (name + ":" + session + ":" + n + ":" + now()).getBytes(StandardCharsets.US_ASCII),
                    (m.partition() + ":" + m.offset() + ":" + (v.equals("-") ? "" : v)).getBytes(StandardCharsets.US_ASCII)));
            n++;
        }
        Map<TopicPartition, OffsetAndMetadata> next = next(batch);
        try {
            producer.beginTransaction();
            for (ProducerRecord<byte[], byte[]> r : out) {
                producer.send(r);
            }
            watchedRun("sendOffsetsToTransaction", maxBlockMs,
                    () -> producer.sendOffsetsToTransaction(next, consumer.groupMetadata()));
            watchedRun("commitTransaction", maxBlockMs, producer::commitTransaction);
        } catch (org.apache.kafka.common.KafkaException e) {
            if (endsMember(e)) {
                throw e;
            }
            event("abort", next.keySet(), words(e));
            watchedRun("abortTransaction", maxBlockMs, producer::abortTransaction);
            rewind(next.keySet());
        }
    }

    /** After an abort: back to the group's committed offsets, as a restarted application would be. */
    void rewind(java.util.Set<TopicPartition> parts) {
        session++;
        try {
            Map<TopicPartition, OffsetAndMetadata> committed = watched("committed", apiTimeoutMs,
                    () -> consumer.committed(parts));
            for (TopicPartition tp : parts) {
                OffsetAndMetadata at = committed.get(tp);
                if (at == null) {
                    consumer.seekToBeginning(List.of(tp));
                } else {
                    consumer.seek(tp, at.offset());
                }
            }
        } catch (IllegalStateException | org.apache.kafka.common.KafkaException e) {
            // no longer assigned: the next owner starts from the committed offsets
        }
    }

    /** Each partition's next offset after the batch. */
    static Map<TopicPartition, OffsetAndMetadata> next(List<ConsumerRecord<byte[], byte[]>> batch) {
        Map<TopicPartition, OffsetAndMetadata> next = new TreeMap<>(
                java.util.Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        for (ConsumerRecord<byte[], byte[]> m : batch) {
            next.merge(new TopicPartition(m.topic(), m.partition()), new OffsetAndMetadata(m.offset() + 1),
                    (a, b) -> a.offset() >= b.offset() ? a : b);
        }
        return next;
    }

    /** commitSync of the batch's next offsets; a failure (a rebalance took the partitions, a broker away) is an
     *  event. A SIGTERM's wakeup() may land in it: the commit is asked again (wakeup fires once). */
    boolean commit(List<ConsumerRecord<byte[], byte[]>> batch) {
        Map<TopicPartition, OffsetAndMetadata> next = next(batch);
        for (int attempt = 0; ; attempt++) {
            try {
                watchedRun("commitSync", apiTimeoutMs, () -> consumer.commitSync(next));
                return true;
            } catch (WakeupException e) {
                if (attempt > 0) {
                    throw e;
                }
            } catch (UnsupportedVersionException e) {
                throw e;
            } catch (org.apache.kafka.common.KafkaException e) {
                event("commit-failed", next.keySet(), e.getClass().getSimpleName());
                return false;
            }
        }
    }

    /** The thread that reads the harness's answers (stdin) as they come, so that a wait for one can end. */
    static void listen() {
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(new FileInputStream(FileDescriptor.in), StandardCharsets.US_ASCII))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    ANSWERS.add(line);
                }
            } catch (IOException e) {
                // as the end of stdin
            }
            ANSWERS.add(END);
        }, "answers");
        reader.setDaemon(true);
        reader.start();
    }

    /** A request (its lines), then the harness's answer, `WORD P=OFFSET ...`: {partition: offset}. No answer within
     *  ANSWER_TIMEOUT_MS of waiting (the time the member was frozen, SIGSTOP, is not counted), the end of stdin, or
     *  another answer is a NoAnswer, which ends the member. */
    static Map<Integer, Long> ask(String request, String word) {
        String asked = request.split("\n", 2)[0];
        say(request);
        String answer = null;
        long waited = 0;
        try {
            while (answer == null && waited < ANSWER_TIMEOUT_MS) {
                long t0 = System.nanoTime();
                answer = ANSWERS.poll(1, TimeUnit.SECONDS);
                waited += Math.min((System.nanoTime() - t0) / 1_000_000, 2_000);  // a freeze counts as one look
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NoAnswer("interrupted while waiting for the answer to `" + asked + "`");
        }
        if (answer == null) {
            throw new NoAnswer("no answer from the harness in " + ANSWER_TIMEOUT_MS / 1000 + " s to `" + asked + "`");
        }
        if (answer == END) {
            throw new NoAnswer("the harness closed the member's stdin before it answered `" + asked + "`");
        }
        String[] words = answer.split(" ");
        Map<Integer, Long> offsets = new TreeMap<>();
        try {
            if (!words[0].equals(word)) {
                throw new IllegalArgumentException(words[0]);
            }
            for (int i = 1; i < words.length; i++) {
                String[] pair = words[i].split("=", 2);
                offsets.put(Integer.parseInt(pair[0]), Long.parseLong(pair[1]));
            }
        } catch (RuntimeException e) {
            throw new NoAnswer("the answer `" + answer + "` to `" + asked + "` is not `" + word + " P=OFFSET ...`");
        }
        return offsets;
    }

    static final class NoAnswer extends RuntimeException {
        NoAnswer(String message) {
            super(message);
        }
    }

    /** idempotent-sink: the batch processed (a `p atomic` line per record, after its processing), said as one
     *  atomic batch which the harness applies in one transaction of the sink (output upserted by value, rows, next
     *  offsets), and the answer waited for. A partition it fenced (its stored next offset past the batch's first
     *  record: another member processed it meanwhile) was left out: the member seeks there, if it still holds it
     *  (if not, its next owner seeks to the sink's offset on its assignment). The harness writes the `fenced`
     *  event. */
    void idempotent(List<ConsumerRecord<byte[], byte[]>> batch) throws InterruptedException {
        StringBuilder lines = new StringBuilder("b ").append(batch.size());
        long pause = (long) (processingMs * 1e6);
        for (ConsumerRecord<byte[], byte[]> m : batch) {
            if (pause > 0) {
                Thread.sleep(pause / 1_000_000, (int) (pause % 1_000_000));
            }
            lines.append("\np atomic ").append(m.partition()).append(' ').append(m.offset()).append(' ')
                    .append(value(m.value())).append(' ').append(session).append(' ').append(n).append(' ').append(now());
            n++;
        }
        Map<Integer, Long> fenced = ask(lines.toString(), "f");
        if (fenced.isEmpty()) {
            return;
        }
        session++;
        java.util.Set<TopicPartition> held = consumer.assignment();
        for (Map.Entry<Integer, Long> f : fenced.entrySet()) {
            TopicPartition tp = new TopicPartition(topic, f.getKey());
            if (held.contains(tp)) {
                try {
                    consumer.seek(tp, f.getValue());
                } catch (IllegalStateException e) {
                    // no longer assigned: the next assignment seeks from the sink
                }
            }
        }
    }

    /** The group's assignment changes, told as events (a new session at each). */
    final class Listener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            session++;
            String detail = "";
            // idempotent-sink: seek to what the sink stored with the output. Under an incremental protocol
            // (cooperative, KIP-848's consumer) these are the newly added partitions only: those kept go on where
            // this member's own batches left them.
            if (strategy.equals("idempotent-sink") && !partitions.isEmpty() && broken == null) {
                try {
                    detail = seekStored(partitions);
                } catch (RuntimeException e) {
                    broken = e;  // raised by the loop after this poll(), before any record is processed
                }
            }
            event("assign", partitions, detail);
        }

        /** Each partition to its stored next offset, or to its beginning; the offsets as member.py's detail. */
        String seekStored(Collection<TopicPartition> partitions) {
            StringBuilder asked = new StringBuilder("q ");
            partitions.stream().map(TopicPartition::partition).sorted()
                    .forEach(p -> asked.append(asked.length() > 2 ? "," : "").append(p));
            Map<Integer, Long> stored = ask(asked.toString(), "o");
            List<TopicPartition> fresh = new ArrayList<>();
            for (TopicPartition tp : partitions) {
                Long at = stored.get(tp.partition());
                if (at == null) {
                    fresh.add(tp);
                } else {
                    consumer.seek(tp, at);
                }
            }
            if (!fresh.isEmpty()) {
                consumer.seekToBeginning(fresh);
            }
            StringBuilder json = new StringBuilder();
            stored.forEach((p, at) -> json.append(json.length() == 0 ? "{" : ", ").append('"').append(p).append("\": ")
                    .append(at));
            return json.length() == 0 ? "" : json.append('}').toString();
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            session++;
            event("revoke", partitions, "");
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            session++;
            event("lost", partitions, "");
        }
    }
}
