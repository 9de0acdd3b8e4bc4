import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A test for Surefire to run through the JUnit Platform provider (which it resolves only then). */
class SeedTest {
    @Test
    void runs() {
        assertEquals(1, Seed.one());
    }

    @ParameterizedTest
    @ValueSource(ints = {1})
    void parameterized(int value) {
        assertEquals(value, Seed.one());
    }
}
