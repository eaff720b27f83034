// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: a perf-like foreign tracer of the simulated unit.
 *
 * Registers a perf PMU named "intel_pt", as Linux's own PT driver does
 * (arch/x86/events/intel/pt.c:1797-1814: PERF_PMU_CAP_EXCLUSIVE |
 * PERF_PMU_CAP_ITRACE, perf_sw_context, a dynamic type), so that perf's
 * core, not ipt, decides who may use the unit (exclusive_event_init() and
 * exclusive_event_installable(), kernel/events/core.c:4938-5022), and
 * ipt.ko meets the same PMU it would meet on silicon.
 *
 * Its events trace the simulated unit of the CPU they run on, the way
 * pt.c programs it: at start, OUTPUT_BASE and OUTPUT_MASK_PTRS
 * (pt_config_buffer(), pt.c:623-648) and ADDR0 (pt_config_filters(),
 * pt.c:458-497) are written only when the tracer's per-CPU cache says they
 * changed, STATUS is cleared on an event's first start (pt.c:506-509),
 * then RTIT_CTL with TraceEn; stop writes RTIT_CTL without TraceEn
 * whatever the unit holds (pt_config_stop(), pt.c:540-562) and, on
 * PERF_EF_UPDATE, reads the position back into the cache
 * (pt_read_offset(), pt.c:960-977).  Its output goes to a ToPA ring of
 * its own (one 4 KiB region; single-range on models without ToPA).
 *
 * Where pt.c would trace through a table that is not its own, because
 * someone rewrote a register its cache says it holds, the simulator
 * counts the start as "stale" and leaves TraceEn clear instead of writing
 * into that memory: a test sees the bug, and the VM survives it.
 *
 * Statistics per CPU in debugfs cpuN/perf.  See
 * Documentation/simulator.rst, "perf's intel_pt".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitfield.h>
#include <linux/debugfs.h>
#include <linux/gfp.h>
#include <linux/io.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>

#include "ipt_sim_module.h"

/* The range ADDR0 filters: the built-in workload. */
#define IPT_SIM_PERF_ADDR_A	IPT_SIM_CODE_BASE
#define IPT_SIM_PERF_ADDR_B	IPT_SIM_CODE_LOOP_END

/**
 * struct ipt_sim_perf_cpu - the foreign tracer on one CPU
 * @base: its cache of IA32_RTIT_OUTPUT_BASE (pt.c's pt->output_base)
 * @mask: its cache of IA32_RTIT_OUTPUT_MASK_PTRS (pt->output_mask)
 * @addr_a: its cache of ADDR0_A (pt->filters)
 * @addr_b: its cache of ADDR0_B
 * @pos: the position its next start resumes from (OUTPUT_MASK_PTRS
 *       read at the last stop)
 * @ctl: RTIT_CTL its event runs with, TraceEn included while started
 *       (pt.c's event->hw.config)
 * @table: its ToPA table (ToPA models)
 * @region: its output region, one page
 * @running: started and not stopped
 * @starts: starts
 * @stops: stops
 * @stale: starts that found a register other than its cache says, so
 *         that pt.c would trace through someone else's table (left
 *         disabled here)
 * @gp: its writes that faulted (the unit was enabled by someone else)
 * @clobbered: stops that cleared a TraceEn it had not set
 *
 * Locking: under the CPU's ipt_sim_pcpu.lock, with the unit's state.
 */
struct ipt_sim_perf_cpu {
	u64 base;
	u64 mask;
	u64 addr_a;
	u64 addr_b;
	u64 pos;
	u64 ctl;
	struct page *table;
	struct page *region;
	bool running;
	u64 starts;
	u64 stops;
	u64 stale;
	u64 gp;
	u64 clobbered;
};

static DEFINE_PER_CPU(struct ipt_sim_perf_cpu, ipt_sim_perf_pcpu);
static struct pmu ipt_sim_perf_pmu;
static bool ipt_sim_perf_registered;

static bool ipt_sim_perf_topa(void)
{
	return ipt_sim_model->leaf_14_0.ecx & BIT(0);
}

/* One register through the tracer's cache, as pt.c writes it. */
static void ipt_sim_perf_wr(struct ipt_sim_pcpu *pc,
			    struct ipt_sim_perf_cpu *pp, u32 msr, u64 *cache,
			    u64 val, u64 hw, bool *stale)
{
	if (*cache == val) {
		/* pt.c skips the write: the unit had better hold it. */
		if (hw != val)
			*stale = true;
		return;
	}
	if (ipt_sim_wrmsr(&pc->st, msr, val))
		pp->gp++;
	/* pt.c updates its cache whether or not the WRMSR faulted. */
	*cache = val;
}

static void ipt_sim_perf_start(struct perf_event *event, int flags)
{
	struct ipt_sim_pcpu *pc = this_cpu_ptr(ipt_sim_pcpu);
	struct ipt_sim_perf_cpu *pp = this_cpu_ptr(&ipt_sim_perf_pcpu);
	struct ipt_sim_cpu *c = &pc->st;
	bool topa = ipt_sim_perf_topa();
	bool stale = false, first;
	unsigned long irqflags;
	u64 base;

	raw_spin_lock_irqsave(&pc->lock, irqflags);
	first = !event->hw.config;
	pp->starts++;
	base = topa ? page_to_phys(pp->table) : page_to_phys(pp->region);
	if (!pp->pos)
		pp->pos = topa ? 0x7f : PAGE_SIZE - 1;
	ipt_sim_perf_wr(pc, pp, MSR_IA32_RTIT_OUTPUT_BASE, &pp->base, base,
			c->output_base, &stale);
	ipt_sim_perf_wr(pc, pp, MSR_IA32_RTIT_OUTPUT_MASK, &pp->mask, pp->pos,
			c->output_mask | 0x7f, &stale);
	pp->ctl = RTIT_CTL_BRANCH_EN | RTIT_CTL_USR;
	if (topa)
		pp->ctl |= RTIT_CTL_TOPA;
	if (ipt_sim_nr_ranges(ipt_sim_model)) {
		ipt_sim_perf_wr(pc, pp, IPT_MSR_RTIT_ADDR_A(0), &pp->addr_a,
				IPT_SIM_PERF_ADDR_A, c->addr_a[0], &stale);
		ipt_sim_perf_wr(pc, pp, IPT_MSR_RTIT_ADDR_B(0), &pp->addr_b,
				IPT_SIM_PERF_ADDR_B, c->addr_b[0], &stale);
		/* ADDR0_CFG = 1: FilterEn. */
		pp->ctl |= FIELD_PREP(IPT_RTIT_CTL_ADDR_CFG(0), 1);
	}
	if (first && ipt_sim_wrmsr(c, MSR_IA32_RTIT_STATUS, 0))
		pp->gp++;
	pp->ctl |= RTIT_CTL_TRACEEN;
	event->hw.config = pp->ctl;
	if (stale)
		pp->stale++;
	else if (ipt_sim_wrmsr(c, MSR_IA32_RTIT_CTL, pp->ctl))
		pp->gp++;
	pp->running = true;
	ipt_sim_kick(pc, c->ctl & RTIT_CTL_TRACEEN, c->pmi_pending);
	raw_spin_unlock_irqrestore(&pc->lock, irqflags);
	event->hw.state = 0;
}

static void ipt_sim_perf_stop(struct perf_event *event, int flags)
{
	struct ipt_sim_pcpu *pc = this_cpu_ptr(ipt_sim_pcpu);
	struct ipt_sim_perf_cpu *pp = this_cpu_ptr(&ipt_sim_perf_pcpu);
	struct ipt_sim_cpu *c = &pc->st;
	unsigned long irqflags;
	bool ours;

	if (event->hw.state & PERF_HES_STOPPED)
		return;
	raw_spin_lock_irqsave(&pc->lock, irqflags);
	if (pp->running) {
		pp->stops++;
		/* TraceEn as this tracer left it: its own, or someone else's. */
		ours = c->ctl == pp->ctl;
		if ((c->ctl & RTIT_CTL_TRACEEN) && !ours)
			pp->clobbered++;
		pp->ctl &= ~RTIT_CTL_TRACEEN;
		event->hw.config = pp->ctl;
		if (ipt_sim_wrmsr(c, MSR_IA32_RTIT_CTL, pp->ctl))
			pp->gp++;
		if (flags & PERF_EF_UPDATE) {
			pp->base = c->output_base;
			pp->mask = c->output_mask | 0x7f;
			pp->pos = pp->mask;
		}
		pp->running = false;
	}
	raw_spin_unlock_irqrestore(&pc->lock, irqflags);
	event->hw.state = PERF_HES_STOPPED;
}

static int ipt_sim_perf_add(struct perf_event *event, int flags)
{
	event->hw.state = PERF_HES_STOPPED;
	if (flags & PERF_EF_START)
		ipt_sim_perf_start(event, 0);
	return 0;
}

static void ipt_sim_perf_del(struct perf_event *event, int flags)
{
	ipt_sim_perf_stop(event, PERF_EF_UPDATE);
}

static void ipt_sim_perf_read(struct perf_event *event)
{
}

/* config 0 only; exclusivity is the core's (PERF_PMU_CAP_EXCLUSIVE). */
static int ipt_sim_perf_event_init(struct perf_event *event)
{
	if (event->attr.type != ipt_sim_perf_pmu.type)
		return -ENOENT;
	if (event->attr.config)
		return -EINVAL;
	return 0;
}

static struct pmu ipt_sim_perf_pmu = {
	.module = THIS_MODULE,
	.task_ctx_nr = perf_sw_context,
	.capabilities = PERF_PMU_CAP_EXCLUSIVE | PERF_PMU_CAP_ITRACE,
	.event_init = ipt_sim_perf_event_init,
	.add = ipt_sim_perf_add,
	.del = ipt_sim_perf_del,
	.start = ipt_sim_perf_start,
	.stop = ipt_sim_perf_stop,
	.read = ipt_sim_perf_read,
};

/* ---- debugfs: cpuN/perf ---------------------------------------------- */

static int ipt_sim_perf_show(struct seq_file *m, void *v)
{
	struct ipt_sim_pcpu *pc = m->private;
	struct ipt_sim_perf_cpu pp;
	unsigned long flags;

	raw_spin_lock_irqsave(&pc->lock, flags);
	pp = *per_cpu_ptr(&ipt_sim_perf_pcpu, pc->cpu);
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	seq_printf(m, "registered %u\nrunning %u\nstarts %llu\nstops %llu\n",
		   ipt_sim_perf_registered, pp.running, pp.starts, pp.stops);
	seq_printf(m, "stale %llu\ngp %llu\nclobbered %llu\n", pp.stale, pp.gp,
		   pp.clobbered);
	seq_printf(m, "base %#llx\nmask %#llx\naddr0 %#llx %#llx\n", pp.base,
		   pp.mask, pp.addr_a, pp.addr_b);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipt_sim_perf);

/**
 * ipt_sim_perf_debugfs() - create cpuN/perf for one CPU
 * @dir: the CPU's debugfs directory
 * @pc: its unit
 *
 * Context: module init (ipt_sim_debugfs_init()).
 */
void ipt_sim_perf_debugfs(struct dentry *dir, struct ipt_sim_pcpu *pc)
{
	debugfs_create_file("perf", 0444, dir, pc, &ipt_sim_perf_fops);
}

/* ---- set-up and tear-down --------------------------------------------- */

static void ipt_sim_perf_free(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct ipt_sim_perf_cpu *pp = per_cpu_ptr(&ipt_sim_perf_pcpu, cpu);

		if (pp->table)
			__free_page(pp->table);
		if (pp->region)
			__free_page(pp->region);
		pp->table = NULL;
		pp->region = NULL;
	}
}

/**
 * ipt_sim_perf_init() - the tracer's buffers, and its PMU
 *
 * Each CPU gets a ToPA table with one 4 KiB output entry and an END entry
 * back to the table (a ring, no INT: no PMI, it never reads its data).  If
 * the PMU cannot be registered (a machine whose own PT driver took the
 * name), the simulator works without it and says so.
 *
 * Context: module init, after ipt_sim_pcpu_init().
 * Return: 0 or -ENOMEM.
 */
int ipt_sim_perf_init(void)
{
	unsigned int cpu;
	int ret;

	for_each_possible_cpu(cpu) {
		struct ipt_sim_perf_cpu *pp = per_cpu_ptr(&ipt_sim_perf_pcpu, cpu);
		int node = cpu_to_node(cpu);
		u64 *t;

		pp->table = alloc_pages_node(node, GFP_KERNEL | __GFP_ZERO, 0);
		pp->region = alloc_pages_node(node, GFP_KERNEL | __GFP_ZERO, 0);
		if (!pp->table || !pp->region) {
			ipt_sim_perf_free();
			return -ENOMEM;
		}
		t = page_address(pp->table);
		t[0] = page_to_phys(pp->region);
		t[1] = page_to_phys(pp->table) | IPT_TOPA_END;
	}
	ret = perf_pmu_register(&ipt_sim_perf_pmu, "intel_pt", -1);
	if (ret) {
		pr_warn("cannot register the perf PMU intel_pt (%d): no perf-like tracer\n",
			ret);
		return 0;
	}
	ipt_sim_perf_registered = true;
	return 0;
}

/**
 * ipt_sim_perf_exit() - undo ipt_sim_perf_init()
 *
 * Events of the PMU hold a reference to this module (pmu.module), so none
 * exists here.
 *
 * Context: module exit.
 */
void ipt_sim_perf_exit(void)
{
	if (ipt_sim_perf_registered)
		perf_pmu_unregister(&ipt_sim_perf_pmu);
	ipt_sim_perf_registered = false;
	ipt_sim_perf_free();
}
