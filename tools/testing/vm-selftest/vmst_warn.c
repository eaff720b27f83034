// SPDX-License-Identifier: GPL-2.0
/*
 * scripts/vm self-test: triggers a kernel WARN when loaded.
 * The kernel carries on, but scripts/vm must fail the run because of the
 * "WARNING:" report in the kernel log.
 */
#include <linux/bug.h>
#include <linux/module.h>

static int __init vmst_warn_init(void)
{
	WARN_ON(1);	/* the deliberate bug */
	return 0;
}

static void __exit vmst_warn_exit(void)
{
}

module_init(vmst_warn_init);
module_exit(vmst_warn_exit);
MODULE_DESCRIPTION("scripts/vm self-test: WARN_ON(1) at load");
MODULE_LICENSE("GPL");
