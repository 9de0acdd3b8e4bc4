/* The project's test harness: a test is a function returning 0 when it passes; CHECK
 * stops it at the first condition that does not hold. A test program runs the one test
 * named on its command line, so that CTest runs (and reports) every test on its own:
 * add_test(NAME ringbuf.<name> COMMAND <program> <name>). */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

struct test_case {
    const char *name;
    int (*run)(void);
};

#define TEST_CASE(fn) { #fn, fn }

/* main() of a test program: runs the test argv[1] names; an unknown name fails. */
static inline int run_named_test(const struct test_case *cases, size_t count, int argc, char **argv)
{
    size_t i;

    if (argc != 2) {
        fprintf(stderr, "usage: %s TEST\n", argv[0]);
        return 2;
    }
    for (i = 0; i < count; i++)
        if (strcmp(cases[i].name, argv[1]) == 0)
            return cases[i].run();
    fprintf(stderr, "no test named %s\n", argv[1]);
    return 2;
}

#endif
