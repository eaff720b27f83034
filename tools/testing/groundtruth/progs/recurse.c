// SPDX-License-Identifier: GPL-2.0
/* Recursion much deeper than libipt's 64-entry return stack. */
#include <stdio.h>

static volatile int sink;

__attribute__((noinline)) static int depth(int n)
{
	if (n == 0)
		return sink;
	return depth(n - 1) + 1;
}

__attribute__((noinline)) static int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(void)
{
	int s = depth(300) + depth(63) + depth(64) + depth(65) + depth(200);

	s += fib(15);
	printf("%d\n", s);
	return 0;
}
