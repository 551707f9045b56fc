// A bare Kafka Java-client produce loop, the baseline of bench/clients.py: message i to partition i % P with value
// i / P (as the harness's child sends them), a do-nothing callback, then flush. Prints "rate N" (messages per
// second from the first send to the flush's end; building the client and connecting are left out, as the
// harness's child does them before its timed part), "cpu S" (the process's CPU seconds in that time) and "thread TICKS
// TID NAME" per thread (its CPU clock ticks in that time).
//     java -cp "$KAFKA_HOME/libs/*" BareProducer.java BOOTSTRAP TOPIC PARTITIONS MESSAGES KEY=VALUE...

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class BareProducer {
    /** Each thread's CPU clock ticks so far (user and system), by "tid name": what bench/clients.py reads of the
     *  harness's child from outside, read here from inside, as this process ends when it has timed its loop. */
    static Map<String, Long> threadTicks() throws java.io.IOException {
        Map<String, Long> ticks = new HashMap<>();
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path task : (Iterable<Path>) tasks::iterator) {
                try {
                    String stat = Files.readString(task.resolve("stat"));
                    String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    ticks.put(task.getFileName() + " " + name, Long.parseLong(f[11]) + Long.parseLong(f[12]));
                } catch (java.io.IOException gone) {
                    // the thread ended meanwhile
                }
            }
        }
        return ticks;
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("org.apache.logging.log4j.level", "WARN");
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        for (int k = 4; k < args.length; k++) {
            String[] kv = args[k].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        long messages = Long.parseLong(args[3]);
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(props)) {
            p.partitionsFor(topic);  // connected and the topic known before the clock starts
            var os = (com.sun.management.OperatingSystemMXBean)
                    java.lang.management.ManagementFactory.getOperatingSystemMXBean();
            long cpu = os.getProcessCpuTime();
            Map<String, Long> before = threadTicks();
            long t = System.nanoTime();
            for (long i = 0; i < messages; i++) {
                byte[] value = Long.toString(i / partitions).getBytes(StandardCharsets.US_ASCII);
                p.send(new ProducerRecord<>(topic, (int) (i % partitions), null, value), (md, e) -> { });
            }
            p.flush();
            System.out.println("rate " + messages / ((System.nanoTime() - t) / 1e9));
            System.out.println("cpu " + (os.getProcessCpuTime() - cpu) / 1e9);  // every thread's, JIT and GC too
            Map<String, Long> after = threadTicks();
            after.forEach((thread, ticks) -> System.out.println(
                    "thread " + (ticks - before.getOrDefault(thread, 0L)) + " " + thread));
        }
    }
}
