package dev.reconf.kstreams;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The Java twin of runtime/client.py's {@code AssignmentClient}: reads
 * {@code <publishedRoot>/<jobId>/{LATEST,v<N>.json}}, never writes there, and decides whether a
 * manifest is safe to apply with the same rules in the same order (job, checksum, versions only
 * go up, no unknown or missing units, known nodes, no terminated node in use). The shared vectors
 * (tests/kafka/vectors/) hold both clients to the same outcome.
 */
public final class ManifestClient {
    private static final int SHOW = 5;
    private final Path publishedRoot;
    private final String jobId;

    public ManifestClient(Path publishedRoot, String jobId) {
        this.publishedRoot = publishedRoot;
        this.jobId = jobId;
    }

    public Path pathOf(long version) {
        return publishedRoot.resolve(jobId).resolve("v" + version + ".json");
    }

    public Path latestPath() {
        return publishedRoot.resolve(jobId).resolve("LATEST");
    }

    /** The manifest LATEST names, or empty when nothing is published yet. */
    public Optional<Manifest> fetchLatest() throws Refused {
        Path latest = latestPath();
        String text;
        try {
            text = ascii(Files.readAllBytes(latest));
        } catch (NoSuchFileException exc) {
            return Optional.empty();
        } catch (IOException exc) {
            throw new Refused("CorruptManifest", latest, "unreadable (" + exc.getMessage()
                + "); the publisher must rewrite LATEST with a published version number");
        }
        String stripped = pyStrip(text);
        if (stripped.isEmpty() || !stripped.chars().allMatch(c -> c >= '0' && c <= '9')
                || stripped.replaceFirst("^0+", "").isEmpty()) {
            throw new Refused("CorruptManifest", latest, "must hold a version number >= 1 and a "
                + "newline; the publisher must rewrite LATEST with a published version number");
        }
        long version;
        try {
            version = Long.parseLong(stripped);
        } catch (NumberFormatException exc) {
            throw new Refused("CorruptManifest", latest, "version number out of range");
        }
        Path path = pathOf(version);
        String body;
        try {
            body = utf8(Files.readAllBytes(path));
        } catch (NoSuchFileException exc) {
            throw new Refused("CorruptManifest", path, "cannot use v" + version
                + " named by LATEST: not found; republish it with `publish`");
        } catch (IOException exc) {
            throw new Refused("CorruptManifest", path, "cannot use v" + version
                + " named by LATEST: unreadable (" + exc.getMessage() + ")");
        }
        Manifest manifest;
        try {
            manifest = Manifest.parse(body, path.toString());
        } catch (Manifest.Invalid exc) {
            throw new Refused("CorruptManifest", path, "cannot use v" + version + " named by LATEST: "
                + exc.getMessage() + "; republish it with `publish` (the current assignment stays)");
        }
        if (!manifest.jobId().equals(jobId)) {
            throw new Refused("CorruptManifest", path, "field 'job_id' is '" + manifest.jobId()
                + "' but the file is filed under '" + jobId + "'");
        }
        if (manifest.version() != version) {
            throw new Refused("CorruptManifest", path, "field 'version' is " + manifest.version()
                + " but the file name says v" + version);
        }
        return Optional.of(manifest);
    }

    /**
     * True: apply {@code manifest}; false: it is the version already running. Throws
     * {@link Refused} for anything unsafe ({@code currentVersion} null: nothing applied yet).
     */
    public boolean accept(Manifest manifest, Long currentVersion, Set<String> knownUnits,
                          Set<String> knownNodes) throws Refused {
        Path path = pathOf(manifest.version());
        if (!manifest.jobId().equals(jobId)) {
            throw new Refused("CorruptManifest", path, "manifest is for job '" + manifest.jobId()
                + "', this runtime runs '" + jobId + "'; publish it under its own job directory");
        }
        String actual = Manifest.expectedChecksum(Manifest.checksumOf(manifest.assignment()),
            manifest.schedule());
        if (!actual.equals(manifest.checksum())) {
            throw new Refused("ChecksumMismatch", path, "checksum " + manifest.checksum()
                + " does not match the assignment (" + actual + "); the file was altered or torn"
                + " - republish this version from the assignments table");
        }
        if (currentVersion != null && manifest.version() < currentVersion) {
            throw new Refused("StaleVersion", path, "version " + manifest.version()
                + " is older than v" + currentVersion + " already running; LATEST must name v"
                + currentVersion + " or newer (versions only go up)");
        }
        if (currentVersion != null && manifest.version() == currentVersion) {
            return false;
        }
        Set<String> placed = manifest.assignment().keySet();
        Set<String> unknown = minus(placed, knownUnits);
        if (!unknown.isEmpty()) {
            throw new Refused("UnknownKeygroups", path, unknown.size() + " task(s) not in job '"
                + jobId + "': " + ids(unknown) + "; the plan was made for another job shape");
        }
        Set<String> missing = minus(knownUnits, placed);
        if (!missing.isEmpty()) {
            throw new Refused("MissingKeygroups", path, missing.size() + " task(s) of job '" + jobId
                + "' have no node: " + ids(missing) + "; the assignment must place every task");
        }
        Set<String> nodes = new TreeSet<>(knownNodes);
        nodes.addAll(manifest.nodesToAdd());
        Set<String> stray = minus(new TreeSet<>(manifest.assignment().values()), nodes);
        if (!stray.isEmpty()) {
            throw new Refused("UnknownNodes", path, stray.size() + " node(s) unknown to the runtime "
                + "and not in scaling.nodes_to_add: " + ids(stray));
        }
        Set<String> busy = new TreeSet<>(manifest.nodesToTerminate());
        busy.retainAll(manifest.assignment().values());
        if (!busy.isEmpty()) {
            throw new Refused("TerminatedNodeInUse", path, "scaling.nodes_to_terminate lists node(s)"
                + " that still host tasks: " + ids(busy));
        }
        return true;
    }

    private static Set<String> minus(Collection<String> a, Collection<String> b) {
        Set<String> out = new TreeSet<>(a);
        out.removeAll(b);
        return out;
    }

    private static String ids(Set<String> ids) {
        String shown = ids.stream().limit(SHOW).collect(Collectors.joining(", "));
        return ids.size() > SHOW ? shown + " (+" + (ids.size() - SHOW) + " more)" : shown;
    }

    private static String ascii(byte[] raw) throws IOException {
        return decode(raw, StandardCharsets.US_ASCII);
    }

    private static String utf8(byte[] raw) throws IOException {
        return decode(raw, StandardCharsets.UTF_8);
    }

    private static String decode(byte[] raw, java.nio.charset.Charset charset) throws IOException {
        try {
            return charset.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(raw))
                .toString();
        } catch (CharacterCodingException exc) {
            throw new IOException("not " + charset.name() + " text", exc);
        }
    }

    // Python's str.strip() on ASCII text: space, \t \n \v \f \r and the separators \x1c-\x1f.
    static String pyStrip(String s) {
        int start = 0;
        int end = s.length();
        while (start < end && isPySpace(s.charAt(start))) {
            start++;
        }
        while (end > start && isPySpace(s.charAt(end - 1))) {
            end--;
        }
        return s.substring(start, end);
    }

    private static boolean isPySpace(char c) {
        return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
    }
}
