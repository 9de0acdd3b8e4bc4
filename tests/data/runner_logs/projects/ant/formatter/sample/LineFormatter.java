package sample;

import java.io.OutputStream;
import java.io.PrintStream;

import junit.framework.AssertionFailedError;
import junit.framework.Test;

import org.apache.tools.ant.taskdefs.optional.junit.JUnitResultFormatter;
import org.apache.tools.ant.taskdefs.optional.junit.JUnitTest;

/**
 * Runner-log fixture: one line per test in the form lombok's own formatter prints
 * (`[PASS] name`, `[FAIL] name`, `[ERR] name`, the name being JUnit's Test.toString()),
 * written for this fixture; Ant's task prefixes each line of its output with `[junit]`.
 */
public class LineFormatter implements JUnitResultFormatter {
    private PrintStream out = System.out;
    private Test marked;

    private void result(Test test, String status) {
        out.println("[" + status + "] " + test);
        out.flush();
    }

    @Override public void addError(Test test, Throwable error) { marked = test; result(test, "ERR"); out.println("  " + error); }
    @Override public void addFailure(Test test, AssertionFailedError failure) { marked = test; result(test, "FAIL"); out.println("  " + failure); }
    @Override public void endTest(Test test) { if (test != marked) result(test, "PASS"); }
    @Override public void startTest(Test test) { }
    @Override public void startTestSuite(JUnitTest suite) { }
    @Override public void endTestSuite(JUnitTest suite) { }
    @Override public void setOutput(OutputStream stream) { out = new PrintStream(stream, true); }
    @Override public void setSystemOutput(String text) { }
    @Override public void setSystemError(String text) { }
}
