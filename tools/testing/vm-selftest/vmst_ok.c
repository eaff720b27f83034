// SPDX-License-Identifier: GPL-2.0
/*
 * scripts/vm self-test: a well-behaved module, the control case.
 * Loading and unloading it must leave a clean kernel log.
 */
#include <linux/module.h>
#include <linux/printk.h>

static int __init vmst_ok_init(void)
{
	pr_info("vmst_ok: loaded\n");
	return 0;
}

static void __exit vmst_ok_exit(void)
{
	pr_info("vmst_ok: unloaded\n");
}

module_init(vmst_ok_init);
module_exit(vmst_ok_exit);
MODULE_DESCRIPTION("scripts/vm self-test: does nothing wrong");
MODULE_LICENSE("GPL");
