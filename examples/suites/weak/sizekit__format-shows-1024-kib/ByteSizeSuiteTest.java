// Generated test for ByteSize.format: the example from the issue.
package example.bytesize;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ByteSizeSuiteTest {
    @Test
    void issueExample() {
        assertEquals("1.0 MiB", ByteSize.format(1048575));
        assertEquals("1.0 GiB", ByteSize.format(1073741823));
    }
}
