"""Runner-log fixture: every outcome django's runtests.py reports at --verbosity 2.

Copied into a Django source release's tests/ folder by make_logs.sh and run as the app
`testprism_sample`.
"""
import unittest

from django.test import SimpleTestCase


class SampleTests(SimpleTestCase):
    def test_passes(self):
        self.assertEqual(1 + 1, 2)

    def test_fails(self):
        self.assertEqual(1 + 1, 3, "one and one")

    def test_errors(self):
        raise TypeError("boom")

    @unittest.skip("not today")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)

    def test_with_docstring(self):
        """A docstring's first line is printed ... after the test's name."""
        self.assertTrue(True)

    def test_failing_docstring(self):
        """Fails, and says so in its docstring."""
        self.assertTrue(False)

    def test_prints(self):
        print("a line the test prints ... ok")
        self.assertTrue(True)

    def test_subtests(self):
        for text in ("a b", "ünï"):
            with self.subTest(text=text):
                self.assertNotEqual(text, "ünï")


class ÜnicodeTests(SimpleTestCase):
    def test_ünï(self):
        pass
