/* Generated tests for ringbuf: a ring holding exactly its capacity is full, not empty. */
#include <stdlib.h>

#include "check.h"
#include "ringbuf.h"

static int issue_example(void)
{
    ringbuf rb;
    char out[16] = {0};

    CHECK(rb_init(&rb, 16) == 0);
    CHECK(rb_write(&rb, "0123456789abcdef", 16) == 16);
    CHECK(rb_size(&rb) == 16);
    CHECK(rb_space(&rb) == 0);
    CHECK(rb_read(&rb, out, 16) == 16);
    CHECK(memcmp(out, "0123456789abcdef", 16) == 0);
    CHECK(rb_size(&rb) == 0 && rb_space(&rb) == 16);
    rb_free(&rb);
    return 0;
}

static int full_ring_rejects_more(void)
{
    ringbuf rb;
    char out[4] = {0};

    CHECK(rb_init(&rb, 4) == 0);
    CHECK(rb_write(&rb, "abcd", 4) == 4);
    CHECK(rb_write(&rb, "e", 1) == 0);
    CHECK(rb_write(&rb, "efgh", 4) == 0);
    CHECK(rb_size(&rb) == 4);
    CHECK(rb_peek(&rb, out, 4) == 4 && memcmp(out, "abcd", 4) == 0);
    CHECK(rb_read(&rb, out, 1) == 1 && out[0] == 'a');
    CHECK(rb_write(&rb, "XY", 2) == 1); /* one byte of room again */
    CHECK(rb_read(&rb, out, 4) == 4 && memcmp(out, "bcdX", 4) == 0);
    rb_free(&rb);
    return 0;
}

static int partial_write_at_the_boundary(void)
{
    ringbuf rb;
    char out[6] = {0};

    CHECK(rb_init(&rb, 6) == 0);
    CHECK(rb_write(&rb, "abcd", 4) == 4);
    CHECK(rb_write(&rb, "efgh", 4) == 2);
    CHECK(rb_size(&rb) == 6 && rb_space(&rb) == 0);
    CHECK(rb_read(&rb, out, 6) == 6 && memcmp(out, "abcdef", 6) == 0);
    rb_free(&rb);
    return 0;
}

static int wraparound_order(void)
{
    ringbuf rb;
    char out[8] = {0};

    CHECK(rb_init(&rb, 5) == 0);
    CHECK(rb_write(&rb, "abc", 3) == 3);
    CHECK(rb_read(&rb, out, 2) == 2 && memcmp(out, "ab", 2) == 0);
    CHECK(rb_write(&rb, "defg", 4) == 4); /* wraps, and fills the ring */
    CHECK(rb_size(&rb) == 5);
    CHECK(rb_peek(&rb, out, 8) == 5 && memcmp(out, "cdefg", 5) == 0);
    CHECK(rb_read(&rb, out, 8) == 5 && memcmp(out, "cdefg", 5) == 0);
    CHECK(rb_size(&rb) == 0);
    rb_free(&rb);
    return 0;
}

static int peek_leaves_bytes(void)
{
    ringbuf rb;
    char out[4] = {0};

    CHECK(rb_init(&rb, 3) == 0);
    CHECK(rb_write(&rb, "xyz", 3) == 3);
    CHECK(rb_peek(&rb, out, 2) == 2 && memcmp(out, "xy", 2) == 0);
    CHECK(rb_peek(&rb, out, 4) == 3 && memcmp(out, "xyz", 3) == 0);
    CHECK(rb_size(&rb) == 3 && rb_space(&rb) == 0);
    rb_free(&rb);
    return 0;
}

static int clear_resets(void)
{
    ringbuf rb;
    char out[4] = {0};

    CHECK(rb_init(&rb, 4) == 0);
    CHECK(rb_write(&rb, "abcd", 4) == 4);
    rb_clear(&rb);
    CHECK(rb_size(&rb) == 0 && rb_space(&rb) == 4);
    CHECK(rb_read(&rb, out, 4) == 0);
    CHECK(rb_write(&rb, "wxyz", 4) == 4);
    CHECK(rb_read(&rb, out, 4) == 4 && memcmp(out, "wxyz", 4) == 0);
    rb_free(&rb);
    return 0;
}

static int capacity_one(void)
{
    ringbuf rb;
    char out[2] = {0};
    int i;

    CHECK(rb_init(&rb, 0) == -1);
    CHECK(rb_init(&rb, 1) == 0);
    for (i = 0; i < 3; i++) {
        CHECK(rb_write(&rb, "pq", 2) == 1);
        CHECK(rb_size(&rb) == 1 && rb_space(&rb) == 0);
        CHECK(rb_read(&rb, out, 2) == 1 && out[0] == 'p');
    }
    rb_free(&rb);
    return 0;
}

/* Random writes, reads, peeks and clears checked against a plain array model. */
static int random_against_model(void)
{
    enum { CAP = 7, ROUNDS = 3000 };
    unsigned char model[CAP], in[CAP + 3], out[CAP + 3];
    size_t stored = 0, n, want, i;
    unsigned seed = 12345, round;
    ringbuf rb;

    CHECK(rb_init(&rb, CAP) == 0);
    for (round = 0; round < ROUNDS; round++) {
        seed = seed * 1103515245u + 12345u;
        n = (seed >> 16) % (CAP + 3);
        switch ((seed >> 8) % 7) {
        case 0: case 1: case 2:
            for (i = 0; i < n; i++)
                in[i] = (unsigned char)(round + i);
            want = n < CAP - stored ? n : CAP - stored;
            CHECK(rb_write(&rb, in, n) == want);
            memcpy(model + stored, in, want);
            stored += want;
            break;
        case 3: case 4:
            want = n < stored ? n : stored;
            CHECK(rb_read(&rb, out, n) == want);
            CHECK(memcmp(out, model, want) == 0);
            memmove(model, model + want, stored - want);
            stored -= want;
            break;
        case 5:
            want = n < stored ? n : stored;
            CHECK(rb_peek(&rb, out, n) == want);
            CHECK(memcmp(out, model, want) == 0);
            break;
        default:
            if (round % 5 == 0) {
                rb_clear(&rb);
                stored = 0;
            }
        }
        CHECK(rb_size(&rb) == stored);
        CHECK(rb_space(&rb) == CAP - stored);
    }
    rb_free(&rb);
    return 0;
}

static const struct test_case cases[] = {
    TEST_CASE(issue_example),
    TEST_CASE(full_ring_rejects_more),
    TEST_CASE(partial_write_at_the_boundary),
    TEST_CASE(wraparound_order),
    TEST_CASE(peek_leaves_bytes),
    TEST_CASE(clear_resets),
    TEST_CASE(capacity_one),
    TEST_CASE(random_against_model),
};

int main(int argc, char **argv)
{
    return run_named_test(cases, sizeof cases / sizeof cases[0], argc, argv);
}
