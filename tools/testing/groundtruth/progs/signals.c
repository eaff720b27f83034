// SPDX-License-Identifier: GPL-2.0
/* Signals: raise() (after a syscall) and a timer that lands mid-loop. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t hits, ticks;

static void handler(int sig)
{
	if (sig == SIGALRM)
		ticks++;
	else
		hits++;
}

int main(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 0 }, { 0, 2000 } };
	unsigned long spins = 0;
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	for (i = 0; i < 3; i++)
		raise(SIGUSR1);
	setitimer(ITIMER_REAL, &it, NULL);
	while (!ticks && spins < 2000000)
		spins++;
	printf("%d %d\n", (int)hits, (int)ticks);
	return 0;
}
