package dev.reconf.kstreams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * The version the assignor applied and its task → node map, kept in a small JSON file
 * ({@code reconf.applied.file}) because Kafka Streams makes a new assignor object at every
 * rebalance and the group leader may change: the next rebalance, on whichever instance leads it,
 * must know what runs to enforce "versions only go up" and to keep the previous assignment when a
 * manifest is refused. Written atomically (temp file + rename); the Python side reads it as "the
 * version Kafka Streams applied".
 */
public record Applied(long version, Map<String, String> assignment, String planId, long appliedAtMs,
                      int rebalances) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The applied state, or null when nothing was applied yet (no file). */
    public static Applied read(Path file) throws IOException {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException exc) {
            return null;
        }
        JsonNode data = JSON.readTree(text);
        Map<String, String> assignment = new TreeMap<>();
        data.get("assignment").fields().forEachRemaining(e -> assignment.put(e.getKey(),
            e.getValue().asText()));
        return new Applied(data.get("version").asLong(), Collections.unmodifiableMap(assignment),
            data.get("plan_id").asText(), data.get("applied_at_ms").asLong(),
            data.path("rebalances").asInt(0));
    }

    public void write(Path file) throws IOException {
        ObjectNode out = JSON.createObjectNode();
        out.put("format", 1);
        out.put("version", version);
        out.put("plan_id", planId);
        out.put("applied_at_ms", appliedAtMs);
        out.put("rebalances", rebalances);
        ObjectNode a = out.putObject("assignment");
        new TreeMap<>(assignment).forEach(a::put);
        Files.createDirectories(file.toAbsolutePath().getParent());
        Path tmp = file.resolveSibling("." + file.getFileName() + ".tmp");
        Files.writeString(tmp, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(out) + "\n",
            StandardCharsets.UTF_8);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}
