// Apache Kafka 4.1.0's transaction coordinator: an EndTxn(commit) that arrives while a successor's InitProducerId is
// fencing the committing producer (the fence's pending state set, its abort not yet begun) fails inside the
// coordinator with an IllegalStateException, and the client is told UNKNOWN_SERVER_ERROR (write-up:
// ../kafka-endtxn-epoch-fence.md).
//
// ROUNDS rounds, each with a transactional.id of its own: producer A commits transactions of SENDS records back to
// back (aborting, as an application does, after an abortable error); DELAY ms after A's first commit, producer B
// calls initTransactions() with the same transactional.id, which fences A. A round ends when A fails for good; it
// prints how (the exception's class and message), and the last line counts the rounds by that.
//     java -cp "$KAFKA_HOME/libs/*" EpochFenceRace.java BOOTSTRAP TOPIC [ROUNDS=100] [SENDS=1] [DELAY=100]

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.TransactionAbortableException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class EpochFenceRace {
    public static void main(String[] args) throws Exception {
        System.setProperty("org.apache.logging.log4j.level", "WARN");
        String bootstrap = args[0], topic = args[1];
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 100;
        int sends = args.length > 3 ? Integer.parseInt(args[3]) : 1;
        long delay = args.length > 4 ? Long.parseLong(args[4]) : 100;
        TreeMap<String, Integer> ends = new TreeMap<>();
        for (int round = 0; round < rounds; round++) {
            String id = "epoch-fence-race-" + topic + "-" + round;
            String end = round(bootstrap, topic, id, sends, delay);
            System.out.println("round " + round + ": " + end);
            ends.merge(end.split(":")[0], 1, Integer::sum);
        }
        System.out.println("rounds by how the fenced producer ended: " + ends);
    }

    static Properties props(String bootstrap, String id) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        props.put("transactional.id", id);
        props.put("acks", "all");
        return props;
    }

    /** One round; how A ended: "Class: message (after N commits, M aborts)". */
    static String round(String bootstrap, String topic, String id, int sends, long delay) throws Exception {
        KafkaProducer<byte[], byte[]> a = new KafkaProducer<>(props(bootstrap, id));
        KafkaProducer<byte[], byte[]>[] b = new KafkaProducer[1];
        Thread fencer = new Thread(() -> {
            try {
                Thread.sleep(delay);
                b[0] = new KafkaProducer<>(props(bootstrap, id));
                b[0].initTransactions();
            } catch (Exception e) {
                System.out.println("  the successor's initTransactions() failed: " + e);
            }
        }, "fencer");
        int commits = 0, aborts = 0;
        try {
            a.initTransactions();
            long value = 0, deadline = System.nanoTime() + 60_000_000_000L;
            while (System.nanoTime() < deadline) {
                try {
                    a.beginTransaction();
                    for (int i = 0; i < sends; i++, value++) {
                        a.send(new ProducerRecord<>(topic, (int) (value % 3), null,
                                Long.toString(value).getBytes(StandardCharsets.US_ASCII)));
                    }
                    a.commitTransaction();
                    if (commits++ == 0) {
                        fencer.start();
                    }
                } catch (InvalidProducerEpochException | TransactionAbortableException e) {
                    a.abortTransaction();  // abortable (KIP-890): the next transaction may go on
                    aborts++;
                }
            }
            return "NotFenced: still committing after 60 s (" + commits + " commits, " + aborts + " aborts)";
        } catch (Exception e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage() + " (after " + commits + " commits, "
                    + aborts + " aborts)";
        } finally {
            a.close(Duration.ZERO);
            fencer.join();
            if (b[0] != null) {
                b[0].close(Duration.ofSeconds(5));
            }
        }
    }
}
