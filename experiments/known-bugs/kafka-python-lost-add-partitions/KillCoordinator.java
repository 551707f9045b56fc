// The Java client's side of kill_coordinator.py, step for step: transaction 1 (30 records over partitions 0-2)
// committed; KILL printed, a line awaited on stdin (series.py kills the broker, then starts it again); transaction 2's
// 30 sends (delivery.timeout.ms 60 s), its commit, and how many of its records a read_committed consumer reads.
//
//     python series.py kafka-python-lost-add-partitions/KillCoordinator.java --kill-on KILL --down 3
import java.io.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class KillCoordinator {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        String tid = "kill-coordinator-" + UUID.randomUUID().toString().substring(0, 8);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", tid);
        p.put("delivery.timeout.ms", "60000");
        p.put("request.timeout.ms", "10000");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (Future<RecordMetadata> f : send(producer, topic, tid + " 1 ")) f.get();
            producer.commitTransaction();
            System.out.println("kafka-clients " + org.apache.kafka.common.utils.AppInfoParser.getVersion()
                               + ": transaction 1 committed; KILL");
            System.out.flush();
            new BufferedReader(new InputStreamReader(System.in)).readLine();
            long started = System.nanoTime();
            producer.beginTransaction();
            Map<String, Integer> said = new TreeMap<>();
            for (Future<RecordMetadata> f : send(producer, topic, tid + " 2 ")) {
                String outcome;
                try {
                    f.get();
                    outcome = "acknowledged";
                } catch (Exception e) {
                    outcome = (e.getCause() != null ? e.getCause() : e).getClass().getSimpleName();
                }
                said.merge(outcome, 1, Integer::sum);
            }
            System.out.printf("transaction 2's 30 sends, %d s after the kill: %s%n",
                              (System.nanoTime() - started) / 1_000_000_000L, said);
            try {
                producer.commitTransaction();
                System.out.println("commitTransaction() returned");
            } catch (Exception e) {
                System.out.println("commitTransaction() threw " + e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("isolation.level", "read_committed");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        int mine = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1),
                                               new TopicPartition(topic, 2));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long quiet = System.currentTimeMillis() + 5000;
            while (System.currentTimeMillis() < quiet)
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500)))
                    if (r.value().startsWith(tid + " 2 ")) mine++;
        }
        System.out.println("read_committed reads " + mine + " of transaction 2's 30 records");
    }

    static List<Future<RecordMetadata>> send(KafkaProducer<String, String> producer, String topic, String prefix) {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        for (int i = 0; i < 30; i++) futures.add(producer.send(new ProducerRecord<>(topic, i % 3, null, prefix + i)));
        return futures;
    }
}
