// The Java client's side of commit_after_failure.py, step for step: a transactional producer (kafka-clients of the
// classpath) sends 10 records to partition 0 of TOPIC, acknowledged; the broker (PID) is paused with SIGSTOP; 10 more
// are sent and their futures fail (delivery.timeout.ms 5 s); the broker is resumed (SIGCONT); commitTransaction() is
// called (if it throws, the transaction is aborted); a read_committed consumer counts the transaction's records.
//
//     java -cp "$KAFKA_HOME/libs/*" CommitAfterFailure.java BOOTSTRAP TOPIC PID
import java.time.Duration;
import java.util.*;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.*;

public class CommitAfterFailure {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], pid = args[2];
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        } catch (java.util.concurrent.ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) throw e;
        }
        String tid = "commit-after-failure-" + UUID.randomUUID().toString().substring(0, 8);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", tid);
        p.put("delivery.timeout.ms", "5000");
        p.put("request.timeout.ms", "2000");
        p.put("linger.ms", "0");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            sendTen(producer, topic, tid, 0, "sends 0-9, broker running");
            signal("STOP", pid);
            try {
                sendTen(producer, topic, tid, 10, "sends 10-19, broker paused");
            } finally {
                signal("CONT", pid);
            }
            try {
                producer.commitTransaction();
                System.out.println("commitTransaction() returned");
            } catch (Exception e) {
                System.out.println("commitTransaction() threw " + e.getClass().getSimpleName() + ": " + e.getMessage());
                producer.abortTransaction();
                System.out.println("abortTransaction() returned");
            }
        }
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("isolation.level", "read_committed");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        int mine = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long quiet = System.currentTimeMillis() + 5000;
            while (System.currentTimeMillis() < quiet)
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500)))
                    if (r.value().startsWith(tid)) mine++;
        }
        System.out.println("read_committed reads " + mine + " of the transaction's 20 records");
    }

    static void sendTen(KafkaProducer<String, String> producer, String topic, String tid, int first, String label) {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        for (int i = first; i < first + 10; i++) futures.add(producer.send(new ProducerRecord<>(topic, 0, null, tid + " " + i)));
        Map<String, Integer> said = new TreeMap<>();
        for (Future<RecordMetadata> f : futures) {
            String outcome;
            try {
                f.get();
                outcome = "acknowledged";
            } catch (Exception e) {
                outcome = (e.getCause() != null ? e.getCause() : e).getClass().getSimpleName();
            }
            said.merge(outcome, 1, Integer::sum);
        }
        System.out.println("kafka-clients " + org.apache.kafka.common.utils.AppInfoParser.getVersion() + ": " + label + ": " + said);
    }

    static void signal(String sig, String pid) throws Exception {
        new ProcessBuilder("kill", "-" + sig, pid).inheritIO().start().waitFor();
    }
}
