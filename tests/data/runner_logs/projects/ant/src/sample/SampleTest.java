package sample;

import static org.junit.Assert.assertEquals;

import org.junit.Ignore;
import org.junit.Test;

/** Runner-log fixture: every outcome Ant's junit task reports for JUnit 4 tests. */
public class SampleTest {
    @Test public void passes() { assertEquals(2, 1 + 1); }
    @Test public void fails() { assertEquals(3, 1 + 1); }
    @Test public void errors() { throw new IllegalStateException("boom"); }
    @Ignore("not now") @Test public void ignored() { }
    @Test public void prints() { System.out.println("[PASS] printed by a test"); }
}
