// SPDX-License-Identifier: GPL-2.0
/*
 * Direct calls and returns, nested, plus function pointers, PLT calls,
 * callbacks from libc, calls to the next instruction, and longjmp out of
 * nested calls (returns that skip frames).
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int sink;

__attribute__((noinline)) static int leaf(int x) { sink = x; return x + 1; }
__attribute__((noinline)) static int mid(int x) { return leaf(x) + leaf(x * 2); }
__attribute__((noinline)) static int top(int x) { return mid(x) + mid(x + 1); }
__attribute__((noinline)) static int dbl(int x) { return 2 * x; }
__attribute__((noinline)) static int neg(int x) { return -x; }

/* A call to the next instruction, as 32-bit PIC does: no return follows. */
__attribute__((noinline)) static unsigned long here(void)
{
	unsigned long ip;

	__asm__ volatile("call 1f\n1: pop %0" : "=r"(ip));
	return ip;
}

static int (*const fns[])(int) = { leaf, mid, top, dbl, neg };

static jmp_buf jb;

__attribute__((noinline)) static void thrower(int x) { if (x & 1) longjmp(jb, 1); sink = x; }
__attribute__((noinline)) static void middle(int x) { thrower(x); sink = -x; }

/* Calls middle(), which calls thrower(), which longjmps back here on odd @x. */
__attribute__((noinline)) static int catcher(int x)
{
	if (setjmp(jb))
		return 1;
	middle(x);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int main(int argc, char **argv)
{
	int i, s = 0, v[64];
	int (*volatile fp)(int);

	(void)argv;
	for (i = 0; i < 500; i++)
		s += top(i);
	for (i = 0; i < 500; i++) {
		fp = fns[(i + argc) % 5];
		s += fp(i);
	}
	for (i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	qsort(v, 64, sizeof(v[0]), cmp);	/* callbacks from libc */
	s += (int)strlen(argv[0]) + abs(v[3]);
	for (i = 0; i < 10; i++)
		s += (int)(here() & 1) + leaf(i);
	for (i = 0; i < 4; i++)
		s += catcher(i) + leaf(i);
	printf("%d\n", s);
	return 0;
}
