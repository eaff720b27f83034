// SPDX-License-Identifier: GPL-2.0
/*
 * System calls, and code that appears after start-up: a page mapped
 * executable at run time (the generator must re-read the maps).
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	/* mov $42,%eax; cmp $1,%edi; jne +2; inc %eax; ret */
	static const unsigned char code[] = {
		0xb8, 0x2a, 0, 0, 0, 0x83, 0xff, 0x01, 0x75, 0x02, 0xff, 0xc0, 0xc3
	};
	int (*fn)(int);
	int i, s = 0;
	void *p;

	for (i = 0; i < 20; i++)
		s += getpid() & 1;
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	memcpy(p, code, sizeof(code));
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC))
		return 1;
	fn = (int (*)(int))p;
	s += fn(1) + fn(2);
	if (write(1, "syscalls\n", 9) != 9)
		return 1;
	munmap(p, 4096);
	printf("%d\n", s);
	return 0;
}
