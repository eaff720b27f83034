// SPDX-License-Identifier: GPL-2.0
/* Long TNT runs: nested counted loops with data-dependent branches. */
#include <stdio.h>

static volatile unsigned int sink;

int main(void)
{
	unsigned int i, j, s = 0;

	for (i = 0; i < 60; i++)
		for (j = 0; j < 100; j++)
			if ((i * j) % 3 == 1)
				s += j;
			else
				sink = s;
	printf("%u\n", s);
	return 0;
}
