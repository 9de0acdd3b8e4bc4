package sample;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class SampleTest {
    @Test
    void passes() {
        assertEquals(2, 1 + 1);
    }

    @Test
    void fails() {
        assertEquals(3, 1 + 1, "one and one");
    }

    @Test
    void errors() {
        throw new IllegalStateException("not an assertion");
    }

    @Test
    void ünïcode() {
        assertEquals("a", "a");
    }
}
