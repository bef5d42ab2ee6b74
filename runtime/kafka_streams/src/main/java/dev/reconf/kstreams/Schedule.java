package dev.reconf.kstreams;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A manifest's move schedule (schemas/schedule.py): the plan's moves in ordered waves. Parsed and
 * checked as strictly as {@code Schedule.from_dict}, {@code verify} and {@code check_leads_to}:
 * every move names a task, its source and destination; each task moves at most once and lands
 * where the assignment places it; the schedule's checksum covers its canonical bytes and the
 * assignment's checksum, so a schedule can be neither altered nor moved to another manifest.
 *
 * <p>The canonical bytes are {@code json.dumps({"limits", "waves"}, sort_keys=True,
 * separators=(",", ":"), ensure_ascii=False)}. Numbers are taken as the text the publisher wrote
 * (Python's {@code repr} of each float, the same text {@code json.dumps} produces again), so no
 * float formatting has to be reproduced here; a file whose numbers were rewritten in another
 * notation is refused. {@code maxBytesPerSecond}: the limits' byte rate (null: none), which the
 * assignor paces the waves under ({@link WaveSteps}).
 */
public record Schedule(List<List<Move>> waves, String checksum, Double maxBytesPerSecond) {
    private static final JsonFactory FACTORY = new JsonFactory();
    private static final List<String> LIMITS =
        List.of("max_moves_per_node", "max_moves_per_wave", "max_bytes_per_wave", "ceiling_pct");
    private static final Set<String> LIMITS_AND_RATE = Set.of("max_moves_per_node",
        "max_moves_per_wave", "max_bytes_per_wave", "ceiling_pct", "max_bytes_per_second");
    private static final Set<String> WAVE = Set.of("moves", "peak_pct", "over_ceiling");

    /** One task's move with the state bytes the plan expects it to carry. */
    public record Move(String task, String src, String dst, double stateBytes) {
    }

    /** Parse {@code node} (the manifest's "schedule"); {@code raw}: the whole manifest text. */
    static Schedule parse(JsonNode node, String raw, Map<String, String> assignment,
                          String assignmentChecksum, String source) throws Manifest.Invalid {
        if (!node.isObject() || node.size() != 3 || !node.has("checksum") || !node.has("limits")
                || !node.has("waves")) {
            throw fail(source, "", "must be an object with exactly checksum, limits and waves");
        }
        if (!node.get("checksum").isTextual()) {
            throw fail(source, ".checksum", "must be a string");
        }
        JsonNode limits = node.get("limits");
        Set<String> keys = new HashSet<>();
        if (limits.isObject()) {
            limits.fieldNames().forEachRemaining(keys::add);
        }
        if (!limits.isObject() || !keys.containsAll(LIMITS) || !LIMITS_AND_RATE.containsAll(keys)) {
            throw fail(source, ".limits", "must be an object with exactly " + LIMITS
                + " and optionally max_bytes_per_second");
        }
        Double rate = null;
        JsonNode rateNode = limits.get("max_bytes_per_second");
        if (rateNode != null && !rateNode.isNull()) {
            if (!rateNode.isNumber() || !(rateNode.asDouble() > 0)) {
                throw fail(source, ".limits", "max_bytes_per_second must be a number > 0 or None");
            }
            rate = rateNode.asDouble();
        }
        JsonNode wavesNode = node.get("waves");
        if (!wavesNode.isArray()) {
            throw fail(source, ".waves", "must be a list");
        }
        List<List<Move>> waves = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < wavesNode.size(); i++) {
            JsonNode w = wavesNode.get(i);
            String where = ".waves[" + i + "]";
            Set<String> waveKeys = new HashSet<>();
            if (w.isObject()) {
                w.fieldNames().forEachRemaining(waveKeys::add);
            }
            if (!waveKeys.equals(WAVE)) {
                throw fail(source, where, "must be an object with moves, peak_pct, over_ceiling");
            }
            if (!w.get("moves").isArray() || w.get("moves").isEmpty()) {
                throw fail(source, where + ".moves", "must be a non-empty list");
            }
            if (!w.get("over_ceiling").isBoolean() || !w.get("peak_pct").isNumber()) {
                throw fail(source, where, "peak_pct must be a number, over_ceiling a boolean");
            }
            List<Move> moves = new ArrayList<>();
            for (int j = 0; j < w.get("moves").size(); j++) {
                JsonNode mv = w.get("moves").get(j);
                String at = where + ".moves[" + j + "]";
                if (!mv.isObject() || mv.size() != 4) {
                    throw fail(source, at, "must be an object with keygroup, src, dst, state_bytes");
                }
                for (String k : List.of("keygroup", "src", "dst")) {
                    if (mv.get(k) == null || !mv.get(k).isTextual() || mv.get(k).asText().isEmpty()) {
                        throw fail(source, at, "keygroup, src and dst must be non-empty strings");
                    }
                }
                JsonNode bytes = mv.get("state_bytes");
                if (bytes == null || !bytes.isNumber() || bytes.asDouble() < 0) {
                    throw fail(source, at, "state_bytes must be a number >= 0");
                }
                Move m = new Move(mv.get("keygroup").asText(), mv.get("src").asText(),
                    mv.get("dst").asText(), bytes.asDouble());
                if (!seen.add(m.task())) {
                    throw fail(source, where, "moves '" + m.task() + "' a second time; each unit"
                        + " moves once");
                }
                if (!m.dst().equals(assignment.get(m.task()))) {
                    throw fail(source, where, "moves '" + m.task() + "' to '" + m.dst() + "' but the"
                        + " assignment places it on '" + assignment.get(m.task()) + "'; republish"
                        + " this version");
                }
                moves.add(m);
            }
            waves.add(List.copyOf(moves));
        }
        String expected = checksumOf(raw, assignmentChecksum, source);
        if (!expected.equals(node.get("checksum").asText())) {
            throw fail(source, ".checksum", "'" + node.get("checksum").asText() + "' does not match"
                + " the schedule and assignment (" + expected + "); the file was altered or the"
                + " schedule belongs to another version - republish this version");
        }
        return new Schedule(List.copyOf(waves), node.get("checksum").asText(), rate);
    }

    /** {@code "sha256:" + hex(sha256(canonical(limits, waves) + "\n" + assignmentChecksum))}. */
    static String checksumOf(String raw, String assignmentChecksum, String source)
            throws Manifest.Invalid {
        Object schedule;
        try (JsonParser p = FACTORY.createParser(raw)) {
            p.nextToken();
            Object top = read(p);
            schedule = ((Map<?, ?>) top).get("schedule");
        } catch (IOException | ClassCastException exc) {
            throw fail(source, "", "cannot be read for its checksum (" + exc.getMessage() + ")");
        }
        Map<String, Object> body = new TreeMap<>(Manifest::byCodePoint);
        body.put("limits", ((Map<?, ?>) schedule).get("limits"));
        body.put("waves", ((Map<?, ?>) schedule).get("waves"));
        StringBuilder out = new StringBuilder();
        write(out, body);
        out.append('\n').append(assignmentChecksum);
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256")
                .digest(out.toString().getBytes(StandardCharsets.UTF_8));
            StringBuilder hex = new StringBuilder("sha256:");
            for (byte b : digest) {
                hex.append(String.format("%02x", b));
            }
            return hex.toString();
        } catch (NoSuchAlgorithmException exc) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", exc);
        }
    }

    /** A number as the file spells it. */
    private record Num(String text) {
    }

    private static Object read(JsonParser p) throws IOException {
        JsonToken t = p.currentToken();
        switch (t) {
            case START_OBJECT -> {
                Map<String, Object> map = new TreeMap<>(Manifest::byCodePoint);
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String key = p.currentName();
                    p.nextToken();
                    map.put(key, read(p));
                }
                return map;
            }
            case START_ARRAY -> {
                List<Object> list = new ArrayList<>();
                while (p.nextToken() != JsonToken.END_ARRAY) {
                    list.add(read(p));
                }
                return list;
            }
            case VALUE_STRING -> {
                return p.getText();
            }
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> {
                return new Num(p.getText());
            }
            case VALUE_TRUE -> {
                return Boolean.TRUE;
            }
            case VALUE_FALSE -> {
                return Boolean.FALSE;
            }
            default -> {
                return null;
            }
        }
    }

    private static void write(StringBuilder out, Object value) {
        if (value instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                Manifest.quote(out, (String) e.getKey());
                out.append(':');
                write(out, e.getValue());
            }
            out.append('}');
        } else if (value instanceof List<?> list) {
            out.append('[');
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) {
                    out.append(',');
                }
                write(out, list.get(i));
            }
            out.append(']');
        } else if (value instanceof String s) {
            Manifest.quote(out, s);
        } else if (value instanceof Num n) {
            out.append(n.text());
        } else if (value instanceof Boolean b) {
            out.append(b ? "true" : "false");
        } else {
            out.append("null");
        }
    }

    private static Manifest.Invalid fail(String source, String what, String problem) {
        return new Manifest.Invalid(source + ": field 'schedule" + what + "' " + problem);
    }
}
