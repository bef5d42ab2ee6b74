package dev.reconf.kstreams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.DateTimeException;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * One published manifest, parsed as strictly as schemas/manifest.py's {@code Manifest.from_json}:
 * a missing, unknown or ill-typed field is an error naming the file and the field, because a
 * runtime must never guess at a placement. The checksum is recomputed over the canonical bytes of
 * schemas/manifest.py ({@code json.dumps(sort_keys=True, separators=(",", ":"),
 * ensure_ascii=False)}, UTF-8): keys in code-point order, Python's escapes.
 */
public record Manifest(String jobId, long version, String periodEnd, String planId,
                       String createdAt, String checksum, Map<String, String> assignment,
                       List<String> nodesToAdd, List<String> nodesToMark,
                       List<String> nodesToTerminate, String reason, Schedule schedule) {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern CHECKSUM = Pattern.compile("^sha256:[0-9a-f]{64}$");
    private static final Pattern CANONICAL_INSTANT =
        Pattern.compile("^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$");
    private static final List<String> FIELDS = List.of("job_id", "version", "period_end", "plan_id",
        "created_at", "checksum", "assignment", "scaling");
    /** Top-level fields a manifest may carry: the move schedule (schemas/schedule.py, {@link
     * Schedule}); {@code schedule} is null without it (the assignment is applied at once). */
    private static final List<String> OPTIONAL = List.of("schedule");
    private static final List<String> SCALING_FIELDS =
        List.of("nodes_to_add", "nodes_to_mark", "nodes_to_terminate", "reason");

    /** A manifest that cannot be parsed: {@code ManifestError} of schemas/manifest.py. */
    public static final class Invalid extends Exception {
        private static final long serialVersionUID = 1L;

        Invalid(String message) {
            super(message);
        }
    }

    /** Parse {@code text}; {@code source} (the file) is named in every error. */
    public static Manifest parse(String text, String source) throws Invalid {
        JsonNode data;
        try {
            data = JSON.readTree(text);
        } catch (Exception exc) {
            throw new Invalid(source + ": not valid JSON (" + exc.getMessage() + ")");
        }
        if (data == null || !data.isObject()) {
            throw new Invalid(source + ": top level must be a JSON object");
        }
        checkKeys(data, FIELDS, source, "");
        JsonNode scaling = data.get("scaling");
        if (!scaling.isObject()) {
            throw fail(source, "scaling", "must be an object");
        }
        checkKeys(scaling, SCALING_FIELDS, source, "scaling.");
        JsonNode assignmentNode = data.get("assignment");
        if (!assignmentNode.isObject()) {
            throw fail(source, "assignment", "must be an object");
        }
        List<String> add = names(scaling.get("nodes_to_add"), source, "scaling.nodes_to_add");
        List<String> mark = names(scaling.get("nodes_to_mark"), source, "scaling.nodes_to_mark");
        List<String> term =
            names(scaling.get("nodes_to_terminate"), source, "scaling.nodes_to_terminate");
        String reason = str(scaling.get("reason"), source, "scaling.reason", true);
        String jobId = str(data.get("job_id"), source, "job_id", false);
        JsonNode v = data.get("version");
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < 1) {
            throw fail(source, "version", "must be an integer >= 1, got " + v);
        }
        String periodEnd = str(data.get("period_end"), source, "period_end", false);
        instant(periodEnd, source, "period_end");
        if (!CANONICAL_INSTANT.matcher(periodEnd).matches()) {
            throw fail(source, "period_end", "must be canonical (e.g. 2026-01-01T00:05:00Z), got '"
                + periodEnd + "'");
        }
        String createdAt = str(data.get("created_at"), source, "created_at", false);
        instant(createdAt, source, "created_at");
        String planId = str(data.get("plan_id"), source, "plan_id", false);
        String checksum = str(data.get("checksum"), source, "checksum", false);
        if (!CHECKSUM.matcher(checksum).matches()) {
            throw fail(source, "checksum",
                "must look like 'sha256:<64 hex digits>', got '" + checksum + "'");
        }
        Map<String, String> assignment = new TreeMap<>(Manifest::byCodePoint);
        Iterator<Map.Entry<String, JsonNode>> it = assignmentNode.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            if (e.getKey().isEmpty()) {
                throw fail(source, "assignment (key)", "must not be empty");
            }
            assignment.put(e.getKey(), str(e.getValue(), source, "assignment['" + e.getKey() + "']",
                false));
        }
        // like schemas/manifest.py: the schedule is checked against the assignment's checksum;
        // the manifest's checksum binds the schedule's to it (the client compares: a deleted
        // schedule is a ChecksumMismatch)
        Schedule schedule = data.has("schedule")
            ? Schedule.parse(data.get("schedule"), text, assignment, checksumOf(assignment),
                             source) : null;
        return new Manifest(jobId, v.asLong(), periodEnd, planId, createdAt, checksum,
            java.util.Collections.unmodifiableMap(assignment), add, mark, term, reason, schedule);
    }

    /**
     * {@code "sha256:" + hex(sha256(canonical bytes))}, as schemas/manifest.py computes it. The
     * bytes are hashed as they are made, a block of entries at a time (no canonical string of the
     * whole assignment), and a map already in code-point order (what {@link #parse} returns) is
     * walked as it is, not copied and sorted again.
     */
    public static String checksumOf(Map<String, String> assignment) {
        Map<String, String> sorted = inCodePointOrder(assignment) ? assignment
            : new TreeMap<>(Manifest::byCodePoint);
        if (sorted != assignment) {
            sorted.putAll(assignment);
        }
        MessageDigest digest;
        try {
            digest = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException exc) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", exc);
        }
        StringBuilder out = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, String> e : sorted.entrySet()) {
            if (!first) {
                out.append(',');
            }
            first = false;
            quote(out, e.getKey());
            out.append(':');
            quote(out, e.getValue());
            if (out.length() >= BLOCK) {  // whole entries only: no code point split across blocks
                digest.update(out.toString().getBytes(StandardCharsets.UTF_8));
                out.setLength(0);
            }
        }
        out.append('}');
        digest.update(out.toString().getBytes(StandardCharsets.UTF_8));
        StringBuilder hex = new StringBuilder("sha256:");
        for (byte b : digest.digest()) {
            hex.append(String.format("%02x", b));
        }
        return hex.toString();
    }

    /**
     * The checksum the manifest must carry, as schemas/manifest.py's {@code manifest_checksum}:
     * the assignment's alone, or with a schedule {@code "sha256:" + hex(sha256(assignment
     * checksum + "\n" + schedule checksum))}, so removing the schedule is a mismatch.
     */
    public static String expectedChecksum(String assignmentChecksum, Schedule schedule) {
        if (schedule == null) {
            return assignmentChecksum;
        }
        MessageDigest digest;
        try {
            digest = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException exc) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", exc);
        }
        byte[] sum = digest.digest((assignmentChecksum + "\n" + schedule.checksum())
            .getBytes(StandardCharsets.UTF_8));
        StringBuilder hex = new StringBuilder("sha256:");
        for (byte b : sum) {
            hex.append(String.format("%02x", b));
        }
        return hex.toString();
    }

    /** Characters of canonical JSON hashed at a time by {@link #checksumOf}. */
    private static final int BLOCK = 1 << 16;

    private static boolean inCodePointOrder(Map<String, String> assignment) {
        String last = null;
        for (String key : assignment.keySet()) {
            if (last != null && byCodePoint(last, key) >= 0) {
                return false;
            }
            last = key;
        }
        return true;
    }

    /** The nodes the runtime may use under this manifest besides its own: {@code nodes_to_add}. */
    public Set<String> addedNodes() {
        return new TreeSet<>(nodesToAdd);
    }

    // Python compares str by code point; Java's String.compareTo by UTF-16 unit (differs past
    // the BMP), so sort keys by code point to get json.dumps(sort_keys=True)'s order.
    static int byCodePoint(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int ca = a.codePointAt(i);
            int cb = b.codePointAt(j);
            if (ca != cb) {
                return Integer.compare(ca, cb);
            }
            i += Character.charCount(ca);
            j += Character.charCount(cb);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }

    // json.dumps(ensure_ascii=False): escapes only the quote, the backslash and C0 controls.
    static void quote(StringBuilder out, String s) {
        out.append('"');
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    private static Invalid fail(String source, String what, String problem) {
        return new Invalid(source + ": field '" + what + "' " + problem);
    }

    private static String str(JsonNode value, String source, String what, boolean emptyOk)
            throws Invalid {
        if (value == null || !value.isTextual()) {
            throw fail(source, what, "must be a string");
        }
        if (value.asText().isEmpty() && !emptyOk) {
            throw fail(source, what, "must not be empty");
        }
        return value.asText();
    }

    private static List<String> names(JsonNode value, String source, String what) throws Invalid {
        if (value == null || !value.isArray()) {
            throw fail(source, what, "must be a list of node ids");
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; i < value.size(); i++) {
            out.add(str(value.get(i), source, what + "[" + i + "]", false));
        }
        return List.copyOf(out);
    }

    private static void checkKeys(JsonNode data, List<String> expected, String source,
                                  String prefix) throws Invalid {
        for (String k : expected) {
            if (!data.has(k)) {
                throw new Invalid(source + ": missing field '" + prefix + k + "'");
            }
        }
        TreeSet<String> unknown = new TreeSet<>();
        data.fieldNames().forEachRemaining(unknown::add);
        unknown.removeAll(expected);
        if (prefix.isEmpty()) {
            unknown.removeAll(OPTIONAL);
        }
        if (!unknown.isEmpty()) {
            throw new Invalid(source + ": unknown field '" + prefix + unknown.first()
                + "'; expected only " + expected);
        }
    }

    /**
     * An ISO-8601 instant with a zone, as schemas/landing.py's parse_period_end accepts it
     * (datetime.fromisoformat after Z → +00:00). Java reads the extended format
     * (2026-01-01T00:05:00[.ffffff](Z|±hh:mm)); Python 3.11 also takes the basic format: the
     * publisher writes the extended one only, so both agree on everything it produces.
     */
    private static void instant(String text, String source, String what) throws Invalid {
        try {
            OffsetDateTime.parse(text.replace("Z", "+00:00"), DateTimeFormatter.ISO_OFFSET_DATE_TIME);
        } catch (DateTimeException exc) {
            boolean naive;
            try {
                LocalDateTime.parse(text);
                naive = true;
            } catch (DateTimeException ignored) {
                naive = false;
            }
            throw fail(source, what, naive ? "has no time zone; append Z for UTC"
                : "is not an ISO-8601 instant");
        }
    }
}
