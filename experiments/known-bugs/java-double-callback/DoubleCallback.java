// kafka-clients calls one send's Callback twice once a transactional producer knows it is fenced.
//
//     java -cp "$KAFKA_HOME/libs/*" DoubleCallback.java BOOTSTRAP
//
// Producer A (transactional.id X) begins a transaction and writes one record; producer B initialises X, which
// fences A; A sends once more and waits (it learns of the fencing), then sends 8 records to 4 partitions and is
// closed. Every callback invocation is counted per send. Exit status 1 when a send was called back more than once
// (REPRODUCED), 0 otherwise. Why (read in 4.1.0's bytecode, KafkaProducer.doSend): the record is appended to its
// batch first (RecordAccumulator.append, with the callback attached), then TransactionManager.maybeAddPartition
// throws the stored error; doSend's `catch (ApiException e)` calls the callback and returns a failed future, the
// record stays in its batch, and when the sender aborts that batch it calls the same callback again.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

public class DoubleCallback {
    static final long T0 = System.nanoTime();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String name = "double-callback-" + System.currentTimeMillis();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(name, 4, (short) 1))).all().get();
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("transactional.id", name);
        props.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        props.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        List<AtomicInteger> calls = new ArrayList<>();

        KafkaProducer<String, String> a = new KafkaProducer<>(props);
        a.initTransactions();
        a.beginTransaction();
        send(a, name, 0, calls).get();
        KafkaProducer<String, String> b = new KafkaProducer<>(props);
        b.initTransactions();
        System.out.println("B initialised the same transactional.id: A is fenced");
        try {
            send(a, name, 0, calls).get();
        } catch (Exception e) {
            System.out.println("A learns it: " + e.getCause());
        }
        for (int i = 0; i < 8; i++) {
            try {
                send(a, name, i % 4, calls);
            } catch (Exception e) {
                System.out.println("send() threw " + e);
            }
        }
        Thread.sleep(3000);  // the sender aborts the batches meanwhile, or at the close
        a.close(Duration.ofSeconds(5));
        b.close(Duration.ofSeconds(5));
        int twice = 0;
        for (int i = 0; i < calls.size(); i++) {
            System.out.printf("send %d: called back %d time(s)%n", i, calls.get(i).get());
            twice += calls.get(i).get() > 1 ? 1 : 0;
        }
        System.out.println(twice > 0 ? "REPRODUCED: " + twice + " of " + calls.size() + " sends called back twice"
                                     : "not reproduced: every send called back at most once");
        System.exit(twice > 0 ? 1 : 0);
    }

    static java.util.concurrent.Future<?> send(KafkaProducer<String, String> producer, String topic, int partition,
                                               List<AtomicInteger> calls) {
        int index = calls.size();
        AtomicInteger count = new AtomicInteger();
        calls.add(count);
        return producer.send(new ProducerRecord<>(topic, partition, null, "v" + index), (md, e) ->
                System.out.printf("%6.0f ms send %d callback #%d on %s: %s%n", (System.nanoTime() - T0) / 1e6, index,
                        count.incrementAndGet(), Thread.currentThread().getName(),
                        e == null ? "acknowledged" : e.getClass().getSimpleName()));
    }
}
