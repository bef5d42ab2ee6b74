package dev.reconf.kstreams;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignor;
import org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * reconf's placement as a Kafka Streams task assignor (KIP-924, {@code task.assignor.class}).
 *
 * <p>At every rebalance (on the group leader) it reads the newest published manifest
 * ({@code <reconf.published.root>/<reconf.job>/LATEST → v<N>.json}) with exactly runtime/client.py's
 * rules ({@link ManifestClient}): a unit is a task id {@code <subtopology>_<partition>}, a node is
 * the {@code client.tag.reconf.node} of a Kafka Streams instance. An accepted manifest becomes the
 * active-task assignment. A refused one (tampered, older, wrong units or nodes) or one that names a
 * node not in the group now keeps the previously applied version's assignment; only with no
 * usable previous assignment (nothing applied yet, or the tasks or instances changed under it) does
 * it fall back to Kafka's {@link StickyTaskAssignor}. Every decision is one log line saying why.
 * Each client gets a follow-up rebalance {@code reconf.followup.ms} from now, so a new version is
 * picked up within that delay without any member joining or leaving.
 *
 * <p>Config keys (passed through the Streams properties): {@code reconf.published.root},
 * {@code reconf.job}, {@code reconf.applied.file} (where the applied version is kept, shared by the
 * instances), {@code reconf.followup.ms} (default 10000), {@code reconf.node.tag} (default
 * {@code reconf.node}).
 */
public final class ReconfTaskAssignor implements TaskAssignor {
    public static final String PUBLISHED_ROOT = "reconf.published.root";
    public static final String JOB = "reconf.job";
    public static final String APPLIED_FILE = "reconf.applied.file";
    public static final String FOLLOWUP_MS = "reconf.followup.ms";
    public static final String NODE_TAG = "reconf.node.tag";
    public static final String STATE_ROOT = "reconf.state.root";
    public static final String WAVE_POLL_MS = "reconf.wave.poll.ms";
    public static final String WAVE_TIMEOUT_MS = "reconf.wave.timeout.ms";
    private static final Logger LOG = LoggerFactory.getLogger(ReconfTaskAssignor.class);

    private Path publishedRoot;
    private String job;
    private Path appliedFile;
    private long followupMs = 10_000L;
    private String nodeTag = "reconf.node";
    private Path stateRoot;
    private long wavePollMs = 1_000L;
    private long waveTimeoutMs = 120_000L;

    @Override
    public void configure(Map<String, ?> configs) {
        publishedRoot = Path.of(required(configs, PUBLISHED_ROOT));
        job = required(configs, JOB);
        appliedFile = Path.of(required(configs, APPLIED_FILE));
        Object followup = configs.get(FOLLOWUP_MS);
        if (followup != null) {
            followupMs = Long.parseLong(followup.toString());
        }
        Object tag = configs.get(NODE_TAG);
        if (tag != null) {
            nodeTag = tag.toString();
        }
        Object root = configs.get(STATE_ROOT);
        stateRoot = root != null ? Path.of(root.toString())
            : appliedFile.toAbsolutePath().getParent();
        Object poll = configs.get(WAVE_POLL_MS);
        if (poll != null) {
            wavePollMs = Long.parseLong(poll.toString());
        }
        Object timeout = configs.get(WAVE_TIMEOUT_MS);
        if (timeout != null) {
            waveTimeoutMs = Long.parseLong(timeout.toString());
        }
    }

    private static String required(Map<String, ?> configs, String key) {
        Object value = configs.get(key);
        if (value == null || value.toString().isBlank()) {
            throw new IllegalArgumentException("ReconfTaskAssignor: config '" + key + "' is not set;"
                + " add it to the Kafka Streams properties (docs/runtime.md, Kafka Streams)");
        }
        return value.toString();
    }

    @Override
    public TaskAssignment assign(ApplicationState state) {
        Map<ProcessId, KafkaStreamsState> clients = state.kafkaStreamsStates(false);
        Instant followup = Instant.now().plusMillis(followupMs);
        Map<String, ProcessId> byNode = new TreeMap<>();
        for (KafkaStreamsState client : clients.values()) {
            String node = client.clientTags().get(nodeTag);
            if (node == null || byNode.putIfAbsent(node, client.processId()) != null) {
                return fallback(state, followup, node == null
                    ? "instance " + client.processId() + " has no client.tag." + nodeTag
                    : "two instances carry client.tag." + nodeTag + "=" + node);
            }
        }
        Set<String> units = new TreeSet<>();
        state.allTasks().keySet().forEach(t -> units.add(t.toString()));
        Applied applied;
        try {
            applied = Applied.read(appliedFile);
        } catch (IOException | RuntimeException exc) {
            return fallback(state, followup, appliedFile + " is unreadable (" + exc.getMessage()
                + "); delete it to start from the next published version");
        }
        Long current = applied == null ? null : applied.version();
        WaveSteps steps = new WaveSteps(job, stateRoot, appliedFile, wavePollMs, waveTimeoutMs);
        Rollout rollout;
        try {
            rollout = steps.open(applied);
        } catch (IOException | RuntimeException exc) {
            return fallback(state, followup, steps.executionFile() + " is unreadable ("
                + exc.getMessage() + "); delete it to start from the next published version");
        }
        // the highest version taken on: the applied one, or the one whose waves run or ran
        Long taken = rollout != null ? Long.valueOf(rollout.version) : current;
        ManifestClient client = new ManifestClient(publishedRoot, job);
        String keep;
        try {
            Optional<Manifest> latest = client.fetchLatest();
            if (latest.isEmpty()) {
                keep = "nothing published yet under " + publishedRoot.resolve(job);
            } else if (!client.accept(latest.get(), taken, units, byNode.keySet())) {
                keep = "v" + taken + " is already running";
            } else {
                Manifest m = latest.get();
                Set<String> absent = new TreeSet<>(m.assignment().values());
                absent.removeAll(byNode.keySet());
                if (absent.isEmpty() && m.schedule() != null) {
                    Map<String, String> running = runningNow(applied, rollout, clients, byNode,
                        units, m.assignment());
                    Map<String, String> out = steps.start(m, running, applied, rollout,
                        lags(state, byNode));
                    return build(clients, byNode, out, steps.followup(followup));
                }
                if (absent.isEmpty()) {
                    int rebalances = applied == null ? 1 : applied.rebalances() + 1;
                    Applied next = new Applied(m.version(), m.assignment(), m.planId(),
                        System.currentTimeMillis(), rebalances);
                    next.write(appliedFile);
                    LOG.info("reconf: applied v{} of job {} ({} tasks on {} instances; was {})",
                        m.version(), job, units.size(), byNode.size(),
                        current == null ? "the default assignor" : "v" + current);
                    return build(clients, byNode, m.assignment(), followup);
                }
                keep = "v" + m.version() + " names node(s) not in the group now: " + absent
                    + " (added by scaling, not started yet?)";
            }
        } catch (Refused exc) {
            keep = "refused: " + exc.getMessage();
        } catch (IOException exc) {
            keep = "cannot record the applied version in " + appliedFile + ": " + exc.getMessage();
        }
        if (rollout != null) {
            Set<String> gone = new TreeSet<>(rollout.assignment.values());
            gone.removeAll(byNode.keySet());
            try {
                if (!rollout.finished()) {
                    if (!gone.isEmpty()) {
                        steps.failGone(rollout, gone);
                        return fallback(state, followup, "the waves of v" + rollout.version
                            + " stopped: node(s) left the group: " + gone);
                    }
                    Map<String, String> out = steps.step(rollout, applied, lags(state, byNode));
                    return build(clients, byNode, out, steps.followup(followup));
                }
            } catch (IOException exc) {
                return fallback(state, followup, "cannot record the waves' progress in "
                    + steps.executionFile() + ": " + exc.getMessage());
            }
            if (gone.isEmpty() && rollout.assignment.keySet().equals(units)) {
                LOG.info("reconf: job {} keeps the partial assignment of v{} (its waves {} after"
                    + " {} of {}): {}", job, rollout.version, rollout.status, rollout.runs.size(),
                    rollout.plan.size(), keep);
                return build(clients, byNode, rollout.assignment, followup);
            }
            return fallback(state, followup, keep + "; the partial assignment of v"
                + rollout.version + " names node(s) not in the group now: " + gone);
        }
        if (applied == null) {
            return fallback(state, followup, keep + "; no version applied yet");
        }
        Set<String> gone = new TreeSet<>(applied.assignment().values());
        gone.removeAll(byNode.keySet());
        if (!gone.isEmpty()) {
            return fallback(state, followup, keep + "; v" + applied.version()
                + " names node(s) not in the group now: " + gone);
        }
        if (!applied.assignment().keySet().equals(units)) {
            return fallback(state, followup, keep + "; v" + applied.version()
                + " was made for other tasks than the topology has now");
        }
        LOG.info("reconf: job {} keeps v{}: {}", job, applied.version(), keep);
        return build(clients, byNode, applied.assignment(), followup);
    }

    /**
     * What runs now, to rebase a schedule on: the partial assignment of a schedule that ran, else
     * the applied version's, else the tasks the instances own (Kafka's assignor placed them);
     * a task none of these places starts on its target.
     */
    private static Map<String, String> runningNow(Applied applied, Rollout rollout,
                                                  Map<ProcessId, KafkaStreamsState> clients,
                                                  Map<String, ProcessId> byNode, Set<String> units,
                                                  Map<String, String> target) {
        Map<String, String> out = new TreeMap<>();
        if (rollout != null && byNode.keySet().containsAll(rollout.assignment.values())) {
            out.putAll(rollout.assignment);
        } else if (applied != null && byNode.keySet().containsAll(applied.assignment().values())) {
            out.putAll(applied.assignment());
        } else {
            byNode.forEach((node, pid) -> clients.get(pid).previousActiveTasks()
                .forEach(t -> out.putIfAbsent(t.toString(), node)));
        }
        out.keySet().retainAll(units);
        target.forEach(out::putIfAbsent);
        return out;
    }

    /**
     * node → (task → changelog lag) as the instances reported it when they joined this rebalance
     * ({@code KafkaStreamsState.statefulTasksToLagSums}): {@link WaveSteps#RUNNING} (Kafka's
     * {@code Task.LATEST_OFFSET}) for an active task that is RUNNING there — restored and
     * processing — else the records it would have to restore. Empty when the lags cannot be had.
     */
    private Map<String, Map<String, Long>> lags(ApplicationState state,
                                                Map<String, ProcessId> byNode) {
        Map<String, Map<String, Long>> out = new TreeMap<>();
        try {
            Map<ProcessId, KafkaStreamsState> withLags = state.kafkaStreamsStates(true);
            byNode.forEach((node, pid) -> {
                Map<String, Long> lag = new TreeMap<>();
                withLags.get(pid).statefulTasksToLagSums().forEach((t, v) -> lag.put(t.toString(), v));
                out.put(node, lag);
            });
        } catch (RuntimeException exc) {
            LOG.warn("reconf: job {}: task lags not available at this rebalance ({})", job,
                exc.toString());
        }
        return out;
    }

    private TaskAssignment build(Map<ProcessId, KafkaStreamsState> clients,
                                 Map<String, ProcessId> byNode, Map<String, String> assignment,
                                 Instant followup) {
        Map<ProcessId, Set<AssignedTask>> tasks = new HashMap<>();
        clients.keySet().forEach(pid -> tasks.put(pid, new HashSet<>()));
        assignment.forEach((unit, node) -> tasks.get(byNode.get(node))
            .add(new AssignedTask(TaskId.parse(unit), AssignedTask.Type.ACTIVE)));
        List<KafkaStreamsAssignment> out = new ArrayList<>();
        tasks.forEach((pid, set) ->
            out.add(KafkaStreamsAssignment.of(pid, set).withFollowupRebalance(followup)));
        return new TaskAssignment(out);
    }

    private TaskAssignment fallback(ApplicationState state, Instant followup, String why) {
        LOG.warn("reconf: job {} falls back to Kafka's StickyTaskAssignor: {}", job, why);
        TaskAssignment sticky = new StickyTaskAssignor().assign(state);
        List<KafkaStreamsAssignment> out = new ArrayList<>();
        sticky.assignment().forEach(a -> out.add(a.withFollowupRebalance(followup)));
        return new TaskAssignment(out);
    }
}
