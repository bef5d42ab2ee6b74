package dev.reconf.kstreams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The Java client reaches each shared vector's expected outcome (tests/kafka/vectors/). */
class ManifestVectorsTest {
    private static final Path VECTORS = Path.of(System.getProperty("reconf.vectors",
        "../../tests/kafka/vectors"));

    static Stream<Path> vectors() throws Exception {
        List<Path> files;
        try (Stream<Path> s = Files.list(VECTORS)) {
            files = s.filter(p -> p.toString().endsWith(".json")).sorted().toList();
        }
        assertTrue(files.size() >= 30, "expected the shared vectors under " + VECTORS);
        return files.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("vectors")
    void javaClientReachesExpectedOutcome(Path file, @TempDir Path root) throws Exception {
        JsonNode vector = new ObjectMapper().readTree(Files.readString(file, StandardCharsets.UTF_8));
        assertEquals(vector.get("expect").asText(), VectorCheck.outcome(vector, root), file.toString());
    }

    @Test
    void checksumMatchesPythonForPlainAssignment() {
        // python: schemas.manifest.assignment_checksum({"0_0": "node-00", "0_1": "node-01"})
        assertEquals("sha256:b8293fec001b30b4cd7649d051bf50d0ec508ebf897b7c19dfe864ac07857854",
            Manifest.checksumOf(Map.of("0_1", "node-01", "0_0", "node-00")));
    }
}
