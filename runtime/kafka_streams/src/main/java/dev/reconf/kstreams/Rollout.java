package dev.reconf.kstreams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The execution of one manifest's move schedule by {@link ReconfTaskAssignor}, kept in
 * {@code <reconf.state.root>/<job>/execution.json} — the file and format of runtime/execution.py's
 * {@code Execution} (job_id, version, waves, status, started_at, moved, state_bytes, seconds, runs
 * of {wave, moved, state_bytes, seconds, failed}), so {@code load_execution}, the period report
 * and {@code reconf audit} read it as they read the replay runtime's. Kafka Streams makes a new
 * assignor object at every rebalance and the group leader may change, so everything the next
 * rebalance needs to carry on is in the file too: the rebased waves ({@code plan}), the wave
 * handed out now ({@code current}, 1-based; 0 before the first), when it was handed out, and
 * the task → node assignment handed out now ({@code assignment}). Each run also records
 * {@code changelog_records}: the changelog records the moved tasks' new instances had to restore
 * (their lag when the wave was handed out), the state measure Kafka Streams itself reports. Under
 * a byte rate ({@code max_bytes_per_second}) a run keeps, like runtime/execution.py's, the time
 * its tasks took to run ({@code transfer_s}), the paced duration ({@code seconds}) and the
 * measured rate ({@code bytes_per_s}).
 */
public final class Rollout {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One finished wave. */
    /** One finished wave; {@code transferS}: until its tasks ran (before pacing; null without
     * a byte rate), {@code seconds}: until the next wave could start. */
    public record Run(int wave, List<String> moved, double stateBytes, double seconds,
                      List<String> failed, long changelogRecords, Double transferS) {
    }

    final String jobId;
    final long version;
    final String planId;
    final String startedAt;
    final Double rate;
    final List<List<Schedule.Move>> plan;
    final List<Run> runs = new ArrayList<>();
    String status = "running";
    int current;
    long handedOutMs;
    long changelogRecords;
    long upMs;
    Map<String, String> assignment;

    Rollout(String jobId, long version, String planId, String startedAt, Double rate,
            List<List<Schedule.Move>> plan, Map<String, String> assignment) {
        this.jobId = jobId;
        this.version = version;
        this.planId = planId;
        this.startedAt = startedAt;
        this.rate = rate;
        this.plan = List.copyOf(plan);
        this.assignment = new TreeMap<>(assignment);
    }

    boolean finished() {
        return !status.equals("running");
    }

    /** The execution recorded in {@code file}, or null (none, or not one this assignor wrote). */
    static Rollout read(Path file) throws IOException {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException exc) {
            return null;
        }
        JsonNode d = JSON.readTree(text);
        if (d == null || !"kafka-streams".equals(d.path("runtime").asText()) || !d.has("plan")) {
            return null;
        }
        List<List<Schedule.Move>> plan = new ArrayList<>();
        for (JsonNode w : d.get("plan")) {
            List<Schedule.Move> moves = new ArrayList<>();
            for (JsonNode m : w) {
                moves.add(new Schedule.Move(m.get("keygroup").asText(), m.get("src").asText(),
                    m.get("dst").asText(), m.get("state_bytes").asDouble()));
            }
            plan.add(moves);
        }
        Rollout r = new Rollout(d.get("job_id").asText(), d.get("version").asLong(),
            d.path("plan_id").asText(), d.get("started_at").asText(),
            d.path("max_bytes_per_second").isNumber() ? d.get("max_bytes_per_second").asDouble()
                : null, plan, strings(d.get("assignment")));
        r.status = d.get("status").asText();
        r.current = d.path("current").asInt(0);
        r.handedOutMs = d.path("handed_out_ms").asLong(0);
        r.changelogRecords = d.path("current_changelog_records").asLong(0);
        r.upMs = d.path("current_up_ms").asLong(0);
        for (JsonNode x : d.get("runs")) {
            r.runs.add(new Run(x.get("wave").asInt(), list(x.get("moved")),
                x.get("state_bytes").asDouble(), x.get("seconds").asDouble(), list(x.get("failed")),
                x.path("changelog_records").asLong(0),
                x.path("transfer_s").isNumber() ? x.get("transfer_s").asDouble() : null));
        }
        return r;
    }

    void write(Path file) throws IOException {
        ObjectNode out = JSON.createObjectNode();
        out.put("format", 1);
        out.put("runtime", "kafka-streams");
        out.put("job_id", jobId);
        out.put("version", version);
        out.put("plan_id", planId);
        out.put("waves", plan.size());
        out.put("status", status);
        out.put("started_at", startedAt);
        out.put("moved", runs.stream().mapToInt(x -> x.moved().size()).sum());
        out.put("state_bytes", runs.stream().mapToDouble(Run::stateBytes).sum());
        out.put("seconds", runs.stream().mapToDouble(Run::seconds).sum());
        out.put("changelog_records", runs.stream().mapToLong(Run::changelogRecords).sum());
        if (rate != null) {
            out.put("max_bytes_per_second", rate);
        } else {
            out.putNull("max_bytes_per_second");
        }
        ArrayNode rs = out.putArray("runs");
        for (Run x : runs) {
            ObjectNode o = rs.addObject();
            o.put("wave", x.wave());
            x.moved().forEach(o.putArray("moved")::add);
            o.put("state_bytes", x.stateBytes());
            o.put("seconds", x.seconds());
            x.failed().forEach(o.putArray("failed")::add);
            o.put("changelog_records", x.changelogRecords());
            if (x.transferS() != null) {
                o.put("transfer_s", x.transferS());
            } else {
                o.putNull("transfer_s");
            }
            if (x.seconds() > 0) {
                o.put("bytes_per_s", Math.round(x.stateBytes() / x.seconds() * 1000.0) / 1000.0);
            } else {
                o.putNull("bytes_per_s");
            }
        }
        out.put("current", current);
        out.put("handed_out_ms", handedOutMs);
        out.put("current_changelog_records", changelogRecords);
        out.put("current_up_ms", upMs);
        ObjectNode a = out.putObject("assignment");
        new TreeMap<>(assignment).forEach(a::put);
        ArrayNode p = out.putArray("plan");
        for (List<Schedule.Move> w : plan) {
            ArrayNode wa = p.addArray();
            for (Schedule.Move m : w) {
                wa.addObject().put("keygroup", m.task()).put("src", m.src()).put("dst", m.dst())
                    .put("state_bytes", m.stateBytes());
            }
        }
        Files.createDirectories(file.toAbsolutePath().getParent());
        Path tmp = file.resolveSibling("." + file.getFileName() + ".tmp");
        Files.writeString(tmp, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(out) + "\n",
            StandardCharsets.UTF_8);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /**
     * runtime/execution.py's {@code waves_to_run}: the schedule's waves rebased on what runs — a
     * move whose task already sits on its destination is skipped, a task the schedule does not
     * move but that is not where the target puts it moves in one last wave — so the waves always
     * end on the target without losing a task.
     */
    static List<List<Schedule.Move>> rebase(Manifest m, Map<String, String> running) {
        List<List<Schedule.Move>> waves = new ArrayList<>();
        java.util.Set<String> scheduled = new java.util.HashSet<>();
        for (List<Schedule.Move> wave : m.schedule().waves()) {
            List<Schedule.Move> moves = new ArrayList<>();
            for (Schedule.Move mv : wave) {
                scheduled.add(mv.task());
                String now = running.get(mv.task());
                if (now != null && !now.equals(mv.dst())) {
                    moves.add(new Schedule.Move(mv.task(), now, mv.dst(), mv.stateBytes()));
                }
            }
            if (!moves.isEmpty()) {
                waves.add(moves);
            }
        }
        List<Schedule.Move> rest = new ArrayList<>();
        m.assignment().forEach((task, node) -> {
            String now = running.get(task);
            if (now != null && !now.equals(node) && !scheduled.contains(task)) {
                rest.add(new Schedule.Move(task, now, node, 0.0));
            }
        });
        if (!rest.isEmpty()) {
            waves.add(rest);
        }
        return waves;
    }

    private static List<String> list(JsonNode n) {
        List<String> out = new ArrayList<>();
        n.forEach(x -> out.add(x.asText()));
        return out;
    }

    private static Map<String, String> strings(JsonNode n) {
        Map<String, String> out = new TreeMap<>();
        n.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
        return out;
    }
}
