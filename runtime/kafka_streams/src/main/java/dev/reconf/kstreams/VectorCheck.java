package dev.reconf.kstreams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * Runs the Java ManifestClient over the shared vectors (tests/kafka/vectors/) and prints
 * {@code {case: outcome}} as JSON; tests/kafka/test_manifest_vectors.py compares it with
 * runtime/client.py's outcomes, the JUnit test with each case's {@code expect}.
 */
public final class VectorCheck {
    private static final ObjectMapper JSON = new ObjectMapper();

    private VectorCheck() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length == 2 && args[0].equals("--checksums")) {
            // a JSON list of assignments -> the list of their checksums (a property test's batch)
            java.util.List<String> sums = new java.util.ArrayList<>();
            for (JsonNode a : JSON.readTree(Files.readString(Path.of(args[1]),
                    StandardCharsets.UTF_8))) {
                Map<String, String> m = new TreeMap<>();
                a.fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue().asText()));
                sums.add(Manifest.checksumOf(m));
            }
            System.out.println(JSON.writeValueAsString(sums));
            return;
        }
        Map<String, String> out = run(Path.of(args[0]));
        System.out.println(JSON.writeValueAsString(out));
    }

    /** outcome per case name, for every *.json under {@code dir}. */
    public static Map<String, String> run(Path dir) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : files.filter(p -> p.toString().endsWith(".json")).sorted().toList()) {
                JsonNode vector = JSON.readTree(Files.readString(file, StandardCharsets.UTF_8));
                String name = file.getFileName().toString().replaceFirst("\\.json$", "");
                out.put(name, outcome(vector, Files.createTempDirectory("reconf-vector-")));
            }
        }
        return out;
    }

    /** apply / unchanged / nothing, or the refusal's kind (runtime/client.py's class names). */
    public static String outcome(JsonNode vector, Path root) throws IOException {
        String job = vector.get("job_id").asText();
        Path jobDir = Files.createDirectories(root.resolve(job));
        ObjectMapper pretty = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        var names = vector.get("files").fieldNames();
        while (names.hasNext()) {
            String name = names.next();
            JsonNode body = vector.get("files").get(name);
            String text = body.isTextual() ? body.asText() : pretty.writeValueAsString(body);
            Files.writeString(jobDir.resolve(name), text, StandardCharsets.UTF_8);
        }
        ManifestClient client = new ManifestClient(root, job);
        JsonNode cur = vector.get("current_version");
        Long current = cur == null || cur.isNull() ? null : cur.asLong();
        try {
            Optional<Manifest> manifest = client.fetchLatest();
            if (manifest.isEmpty()) {
                return "nothing";
            }
            boolean fresh = client.accept(manifest.get(), current, strings(vector, "known_units"),
                strings(vector, "known_nodes"));
            return fresh ? "apply" : "unchanged";
        } catch (Refused exc) {
            return exc.kind;
        }
    }

    private static Set<String> strings(JsonNode vector, String field) {
        Set<String> out = new TreeSet<>();
        vector.get(field).forEach(n -> out.add(n.asText()));
        return out;
    }
}
