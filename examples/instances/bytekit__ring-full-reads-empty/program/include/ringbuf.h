/* ringbuf: a fixed-capacity byte FIFO (a ring buffer) for streaming I/O.
 *
 * The struct is public so that a ring can live inside another struct or on the stack;
 * its fields are ringbuf.c's business, use the functions below. */
#ifndef RINGBUF_H
#define RINGBUF_H

#include <stddef.h>

typedef struct ringbuf {
    unsigned char *data;
    size_t capacity;
    size_t head; /* index of the next byte to read */
    size_t tail; /* index of the next byte to write */
} ringbuf;

/* Allocates room for `capacity` bytes. Returns 0, or -1 (rb untouched) when capacity is 0
 * or memory is short. */
int rb_init(ringbuf *rb, size_t capacity);
/* Frees the storage; rb may be initialised again. */
void rb_free(ringbuf *rb);

/* Bytes stored, ready to be read. */
size_t rb_size(const ringbuf *rb);
/* Bytes that can still be written: rb_size(rb) + rb_space(rb) == capacity. */
size_t rb_space(const ringbuf *rb);

/* Appends the first min(n, rb_space(rb)) bytes of src and returns how many that was: a
 * full ring takes nothing (nothing stored is ever overwritten). */
size_t rb_write(ringbuf *rb, const void *src, size_t n);
/* Removes the oldest min(n, rb_size(rb)) bytes into dst, in the order they were written,
 * and returns how many that was. */
size_t rb_read(ringbuf *rb, void *dst, size_t n);
/* As rb_read, but leaves the bytes in the ring. */
size_t rb_peek(const ringbuf *rb, void *dst, size_t n);
/* Drops every stored byte. */
void rb_clear(ringbuf *rb);

#endif
