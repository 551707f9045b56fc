// kafka-clients (4.1.0) with transaction version 2: commitTransaction() can send EndTxn before the transaction's
// records, and the coordinator, which has not seen the transaction begin, answers INVALID_TXN_STATE: a fatal
// error for a producer that did nothing wrong (write-up: ../java-endtxn-race.md).
//
// One transactional producer runs transactions of SENDS records back to back, as fast as it can, while BUSY threads
// spin (a loaded machine: the client's I/O thread is descheduled between its two looks at the producer's state).
// Prints how many transactions committed before the first failure, and the failure.
// IO=idle puts the client's I/O thread in the kernel's SCHED_IDLE class (`chrt --idle`), IO=nice gives it nice 19
// (`renice`): it then loses the CPU to the main thread at any point, its window between the two looks included,
// which widens the race without changing the client (a shrink of the loaded machine).
//     java -cp "$KAFKA_HOME/libs/*" EndTxnRace.java BOOTSTRAP TOPIC [TRANSACTIONS=20000] [SENDS=100] [BUSY=1] [IO=normal]

import java.nio.charset.StandardCharsets;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class EndTxnRace {
    public static void main(String[] args) throws Exception {
        System.setProperty("org.apache.logging.log4j.level", "WARN");
        String bootstrap = args[0], topic = args[1];
        int transactions = args.length > 2 ? Integer.parseInt(args[2]) : 20000;
        int sends = args.length > 3 ? Integer.parseInt(args[3]) : 100;
        int busy = args.length > 4 ? Integer.parseInt(args[4]) : 1;
        String io = args.length > 5 ? args[5] : "normal";
        for (int b = 0; b < busy; b++) {
            Thread spin = new Thread(() -> {
                long x = 0;
                while (true) {
                    x += System.nanoTime() % 7;
                }
            }, "busy-" + b);
            spin.setDaemon(true);
            spin.start();
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        props.put("transactional.id", "endtxn-race-" + topic);
        props.put("acks", "all");
        props.put("linger.ms", "5");
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(props)) {
            if (!io.equals("normal")) {
                demote(io);
            }
            p.initTransactions();
            long value = 0;
            for (int t = 0; t < transactions; t++) {
                try {
                    p.beginTransaction();
                    for (int i = 0; i < sends; i++, value++) {
                        p.send(new ProducerRecord<>(topic, (int) (value % 3), null,
                                Long.toString(value).getBytes(StandardCharsets.US_ASCII)));
                    }
                    p.commitTransaction();
                } catch (Exception e) {
                    System.out.println("failed at transaction " + t + " (" + t + " committed before it): " + e);
                    return;
                }
            }
            System.out.println("committed all " + transactions + " transactions");
        }
    }

    /** The client's I/O thread (Linux names it "kafka-producer-", 15 characters) demoted: SCHED_IDLE or nice 19. */
    static void demote(String how) throws Exception {
        int found = 0;
        try (var tasks = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/task"))) {
            for (var task : (Iterable<java.nio.file.Path>) tasks::iterator) {
                String comm = java.nio.file.Files.readString(task.resolve("comm")).trim();
                if (!comm.startsWith("kafka-producer-")) {
                    continue;
                }
                String tid = task.getFileName().toString();
                String[] cmd = how.equals("idle") ? new String[] {"chrt", "--idle", "-p", "0", tid}
                        : new String[] {"renice", "-n", "19", "-p", tid};
                if (new ProcessBuilder(cmd).inheritIO().start().waitFor() != 0) {
                    throw new IllegalStateException("could not demote thread " + tid + " (" + how + ")");
                }
                found++;
            }
        }
        if (found != 1) {
            throw new IllegalStateException(found + " I/O threads found, expected 1");
        }
        System.out.println("I/O thread demoted: " + how);
    }
}
