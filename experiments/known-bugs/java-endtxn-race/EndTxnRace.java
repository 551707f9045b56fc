// kafka-clients (4.1.0) with transaction version 2: commitTransaction() can send EndTxn before the transaction's
// records, and the coordinator, which has not seen the transaction begin, answers INVALID_TXN_STATE: a fatal
// error for a producer that did nothing wrong (write-up: ../java-endtxn-race.md).
//
// One transactional producer runs transactions of SENDS records back to back, as fast as it can, while BUSY threads
// spin (a loaded machine: the client's I/O thread is descheduled between its two looks at the producer's state).
// Prints how many transactions committed before the first failure, and the failure.
//     java -cp "$KAFKA_HOME/libs/*" EndTxnRace.java BOOTSTRAP TOPIC [TRANSACTIONS=20000] [SENDS=100] [BUSY=1]

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
}
