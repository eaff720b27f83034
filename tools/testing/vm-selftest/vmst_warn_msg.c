// SPDX-License-Identifier: GPL-2.0
/*
 * scripts/vm self-test: a WARN with a message when loaded.  Announced by
 * the guest script ("ipt-test: expect warning: MESSAGE", see
 * scripts/vm-check-log) the run is clean; announced with another message
 * it must fail like any WARN.
 */
#include <linux/bug.h>
#include <linux/module.h>

static int __init vmst_warn_msg_init(void)
{
	WARN(1, "vmst_warn_msg: the expected warning\n");
	return 0;
}

static void __exit vmst_warn_msg_exit(void)
{
}

module_init(vmst_warn_msg_init);
module_exit(vmst_warn_msg_exit);
MODULE_DESCRIPTION("scripts/vm self-test: WARN(1, msg) at load");
MODULE_LICENSE("GPL");
