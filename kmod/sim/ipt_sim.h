/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipt_sim: the simulated Intel PT unit (see Documentation/simulator.rst).
 *
 * The rules of the unit are pure functions of a struct ipt_sim_cpu: they
 * never look at which CPU they run on, so KUnit drives them directly.
 * They are, one concern a file: the CPU models and CPUID
 * (ipt_sim_models.c), the registers and XSAVES (ipt_sim_msr.c), what is
 * traced and when (ipt_sim_trace.c), the output engine (ipt_sim_output.c)
 * and the packet encoders (ipt_sim_packets.c).  The module around them
 * (ipt_sim_module.h) keeps one state per CPU, serialises access to it,
 * runs the per-CPU output timer and delivers PMIs.
 */
#ifndef _IPT_SIM_H
#define _IPT_SIM_H

#include <linux/bits.h>
#include <linux/types.h>

#include "../ipt_hw.h"
#include "ipt_sim_feed.h"

/* The built-in workload (see ipt_sim_code). */
#define IPT_SIM_CODE_BASE		0x401000ULL
#define IPT_SIM_CODE_LOOP_END		0x401009ULL
/*
 * The workload's address space: its CR3 as the kernel runs on it (8 KiB
 * aligned, as page-table isolation's PGDs are).  User mode runs on
 * ipt_sim_user_cr3(), which differs under page-table isolation.
 */
#define IPT_SIM_CODE_CR3		0x2000ULL
/* The kernel PCID of the workload's address space with PCID (ASID 0 + 1). */
#define IPT_SIM_CODE_KPCID		0x1ULL

/* On single-entry ToPA parts, the INT PMI comes this early. */
#define IPT_SIM_SINGLE_PMI_EARLY	256

/* CPUID.(0DH,8):EAX of the models that have XSAVES-PT (Ice Lake's). */
#define IPT_SIM_XSAVE_PT_SIZE		128

/* IA32_PERF_GLOBAL_STATUS bit 0: PMC0 overflowed (perf's counter). */
#define IPT_SIM_GLOBAL_PMC0		BIT_ULL(0)

/*
 * The simulated program's speed: TSC ticks it runs for each byte of branch
 * content it generates (a TNT-8 byte of the built-in loop is 8
 * instructions, about 0.25 per cycle).  ipt_sim_run() advances the unit's
 * clock by this much per byte, so a slice's packets spread over time.
 */
#define IPT_SIM_TSC_PER_BYTE		32

/*
 * More MTC periods than this since the unit last ran, and its clocks are
 * taken to have stopped (a C-state): it writes TSC, TMA and CBR on waking
 * rather than an MTC per period, whose 8-bit payload would wrap
 * (ipt_sim_run()).
 */
#define IPT_SIM_MTC_RUN_MAX		64

/* Most bytes of timing packets the clock's advance writes at once. */
#define IPT_SIM_TIME_MAX		(2 * IPT_SIM_MTC_RUN_MAX)

/* Largest group of packets the unit writes in one piece. */
#define IPT_SIM_PKT_MAX			64

/*
 * Pacing (struct ipt_sim_cpu.pace) keeps this much room before STOP for
 * what the unit writes outside a time slice: the FUP and TIP.PGD of a
 * disable or of a context switch, and the TSC, TMA, CBR and MODE.Exec of
 * an enable - several of each, as a traced thread's switch-outs and
 * switch-ins while its program is blocked each write them, and so does
 * each PMI, which stops and restarts the unit to read its position.  On
 * the debug kernel under load, a spinning traced thread that other tasks
 * preempted while its program was blocked went through 256 bytes.
 */
#define IPT_SIM_PACE_RESERVE		(16 * IPT_SIM_PKT_MAX)

/**
 * struct ipt_sim_model - a CPU model the simulator can present
 * @name: the value of the module parameter that selects it
 * @desc: one line for messages and debugfs
 * @signature: CPUID.1:EAX (family, model, stepping)
 * @leaf_14_0: CPUID.(14H,0)
 * @leaf_14_1: CPUID.(14H,1)
 * @hybrid: a hybrid part: odd-numbered CPUs are efficiency cores whose
 *        CPUID.(14H,1) is @leaf_14_1_e (ipt_sim_model_of())
 * @leaf_14_1_e: CPUID.(14H,1) of the efficiency cores of a @hybrid part
 * @leaf_15: CPUID.15H (TSC / core crystal clock)
 * @xsaves_pt: XSAVES supports the PT component (CPUID.(0DH,1):ECX[8])
 * @xsave_pt_size: size of the PT component, CPUID.(0DH,8):EAX (0 without
 *        @xsaves_pt); the module parameter xsave_pt_size overrides it
 * @maxphyaddr: physical address width (CPUID.80000008H:EAX[7:0])
 * @virt_bits: linear address width (CPUID.80000008H:EAX[15:8]): 48, or 57
 *        on parts with 5-level paging (LA57); ADDRn must be canonical to it
 * @nom_ratio: MSR_PLATFORM_INFO[15:8]
 * @bdm106: erratum BDM106: enabling with BranchEn = 0 is #GP
 * @vmx_pt: IA32_VMX_MISC[14]: PT works in VMX operation.  Without it
 *        VMXON clears TraceEn and every WRMSR of IA32_RTIT_CTL in VMX
 *        operation is #GP (debugfs "vmxon")
 * @pti: the kernel runs with page-table isolation (module parameter
 *        "pti"): user mode runs on the user half of the PGD, CR3 bit 12
 * @pcid: the kernel puts PCIDs in CR3 (module parameter "pcid"): the
 *        kernel PCID in CR3[11:0], and under @pti the user PCID with bit 11
 */
struct ipt_sim_model {
	const char *name;
	const char *desc;
	u32 signature;
	struct ipt_cpuid_regs leaf_14_0;
	struct ipt_cpuid_regs leaf_14_1;
	bool hybrid;
	struct ipt_cpuid_regs leaf_14_1_e;
	struct ipt_cpuid_regs leaf_15;
	bool xsaves_pt;
	u32 xsave_pt_size;
	u8 maxphyaddr;
	u8 virt_bits;
	u8 nom_ratio;
	bool bdm106;
	bool vmx_pt;
	bool pti;
	bool pcid;
};

/**
 * struct ipt_sim_stats - what happened on one simulated CPU
 * @rdmsr: RDMSR executed (including faulting ones)
 * @wrmsr: WRMSR executed (including faulting ones)
 * @gp: instructions that faulted (#GP): WRMSR, RDMSR, XSAVES, XRSTORS
 * @op_errors: operational errors (STATUS.Error set)
 * @pmis: ToPA PMIs raised
 * @pmis_lost: PMIs delivered that no handler of the NMI chain claimed
 *        (Linux: "NMI received for unknown reason")
 * @pmis_masked: PMIs raised while LVTPC was masked: not delivered, lost
 * @perf_topa: ToPA PMIs (bit 55) the perf-like NMI handler acknowledged:
 *        lost to ipt if it ran first
 * @lvt_early: LVTPC unmasked while a bit other than 55 of
 *        IA32_PERF_GLOBAL_STATUS was set: left to perf on silicon
 * @bytes: trace bytes written to memory
 * @dropped: trace bytes dropped (OVF)
 * @ovf: OVF packets written
 * @psb: PSB packets written
 * @xsaves: XSAVES executed
 * @xsaves_empty: XSAVES that saved nothing of PT (IA32_XSS bit 8 clear):
 *        TraceEn was left as it was
 * @xrstors: XRSTORS executed
 * @clobbered: TraceEn of a foreign owner (debugfs "foreign") cleared by
 *        a write: what a driver must never do
 * @switches: context switches that changed the running program
 * @stops_ignored: writes or XSAVES that should have cleared TraceEn and
 *        did not, the unit being stuck (debugfs "stuck")
 * @vmxon_cleared: VMXONs that cleared TraceEn (a model without PT in VMX
 *        operation, debugfs "vmxon")
 * @sleeps: system sleeps the unit lost power in (ipt_sim_life.c)
 * @lost_live: of those, the ones it went into with TraceEn = 1: the
 *        trace it was writing was cut without a stop
 * @stopped: trace bytes not written because output was Stopped at a ToPA
 *        STOP entry while TraceEn = 1: what the program generated while
 *        the unit waited (ipt.ko's gap sizes, struct ipt_hw_ops.lost_bytes)
 * @csum: a position-weighted sum of the bytes written, byte i (counting
 *        @bytes from 0) adding byte * IPT_SIM_CSUM_WEIGHT(i): lets a test
 *        compare any stretch of output it read with what the unit wrote
 * @paced: slices in which a @pace program blocked short of a STOP entry
 *        (struct ipt_sim_cpu.pace): its trace waited, nothing was lost
 * @bulk: of @bytes, those the built-in loop wrote in bulk units (struct
 *        ipt_sim_cpu.bulk)
 */
struct ipt_sim_stats {
	u64 rdmsr;
	u64 wrmsr;
	u64 gp;
	u64 op_errors;
	u64 pmis;
	u64 pmis_lost;
	u64 pmis_masked;
	u64 perf_topa;
	u64 lvt_early;
	u64 bytes;
	u64 dropped;
	u64 ovf;
	u64 psb;
	u64 xsaves;
	u64 xsaves_empty;
	u64 xrstors;
	u64 clobbered;
	u64 switches;
	u64 stops_ignored;
	u64 vmxon_cleared;
	u64 sleeps;
	u64 lost_live;
	u64 stopped;
	u64 csum;
	u64 paced;
	u64 bulk;
};

/* The weight of the byte at output index @i in struct ipt_sim_stats.csum. */
#define IPT_SIM_CSUM_WEIGHT(i)	((2 * (u64)(i) + 1) * 0x9e3779b97f4a7c15ULL)

/**
 * struct ipt_sim_feed - branch content supplied by a test
 * @buf: records (struct ipt_sim_feed_hdr, kmod/sim/ipt_sim_feed.h), @len
 *        bytes
 * @len: bytes in @buf
 * @pos: offset of the next record to emit
 * @cap: size of @buf
 */
struct ipt_sim_feed {
	u8 *buf;
	size_t len;
	size_t pos;
	size_t cap;
};

/*
 * Bulk mode (struct ipt_sim_cpu.bulk): the scratch the built-in loop's
 * packets are put together in, and so the largest unit written at once.
 */
#define IPT_SIM_BULK_CHUNK		(16 * 1024)

/* Bytes and separate stretches the unit's internal buffer holds at most. */
#define IPT_SIM_HOLD_MAX	4096
#define IPT_SIM_HOLD_SEGS	32

/**
 * struct ipt_sim_hold - packet bytes buffered inside the unit
 * @limit: the bytes it holds back (debugfs "hold"; 0: every byte goes to
 *        memory as it is written), at most IPT_SIM_HOLD_MAX
 * @len: bytes held now, oldest first in @data
 * @nr_segs: entries of @seg
 * @seg: where the held bytes go: @seg[i].len bytes of @data at @seg[i].pa
 * @data: the held bytes
 *
 * The SDM (vol. 3C, 33.3.3 "Flushing Trace Output"; and TraceEn in the
 * IA32_RTIT_CTL table of 33.2.8.2): "Packets are first
 * buffered internally and then written out asynchronously"; clearing
 * TraceEn flushes them, after which the output MSRs say where the trace
 * ended.  While TraceEn is set, OutputOffset may already count bytes that
 * are not in memory yet: the model counts them at once and writes the
 * newest @limit of them only when TraceEn goes to 0
 * (ipt_sim_hold_flush()).
 */
struct ipt_sim_hold {
	u32 limit;
	u32 len;
	u32 nr_segs;
	struct {
		u64 pa;
		u32 len;
	} seg[IPT_SIM_HOLD_SEGS];
	u8 data[IPT_SIM_HOLD_MAX];
};

/**
 * struct ipt_sim_cpu - the PT unit of one simulated CPU
 * @model: the CPU model; fixed for the life of the state
 * @ctl: IA32_RTIT_CTL
 * @status: IA32_RTIT_STATUS (including PacketByteCnt)
 * @output_base: IA32_RTIT_OUTPUT_BASE
 * @output_mask: IA32_RTIT_OUTPUT_MASK_PTRS (bits 6:0 kept at 1)
 * @cr3_match: IA32_RTIT_CR3_MATCH
 * @addr_a: IA32_RTIT_ADDRn_A
 * @addr_b: IA32_RTIT_ADDRn_B
 * @global_status: IA32_PERF_GLOBAL_STATUS: bit 55 (ToPA PMI) and bit 0
 *        (PMC0 overflow, IPT_SIM_GLOBAL_PMC0); write-1-to-clear through
 *        IA32_PERF_GLOBAL_OVF_CTRL
 * @lvt_masked: the mask bit of the local APIC's LVTPC entry: set when a
 *        PMI is delivered, cleared by an unmask (ipt_sim_nmi.c)
 * @xss: IA32_XSS
 * @tsc: the simulated time stamp counter: set by the caller between
 *        slices, never backwards; advanced by ipt_sim_run() as the program
 *        runs (IPT_SIM_TSC_PER_BYTE)
 * @ran_tsc: @tsc when the unit last produced packets (enable, the end of
 *        a slice); ipt_sim_run() compares it with @tsc to tell a running
 *        clock from an idle gap
 * @last_mtc_ctc: CTC value of the last MTC period seen
 * @last_cyc_tsc: TSC at the last CYC packet
 * @ip: the workload's current instruction pointer
 * @packet_en: PacketEn: packets of the workload are generated
 * @feed_ctx_off: the fed program is outside the traced context (a feed
 *        record flagged IPT_SIM_FEED_CTX_OFF, e.g. in a system call under
 *        user-only tracing): the unit's own IP packets (FUP in PSB+,
 *        after OVF, on disable) are left out, as ContextEn = 0 would
 * @pge_pending: the running program changed (a context switch) and has
 *        not run user code since: the unit is as in the kernel, PacketEn
 *        off; ipt_sim_run() resumes it with TIP.PGE
 * @foreign: TraceEn belongs to another tracer (debugfs "foreign"): no
 *        output of ours, and every write but one clearing TraceEn is #GP
 * @stuck: the unit ignores every clear of TraceEn (debugfs "stuck"): a
 *        fault the driver must survive without freeing live buffers
 * @stuck_pending: a clear of TraceEn was ignored while @stuck
 * @vmx_on: the CPU is in VMX operation (debugfs "vmxon": KVM ran VMXON)
 * @pmi_pending: a PMI was raised and not yet delivered by the glue
 * @ovf_pending: bytes were dropped: the next write starts with OVF
 * @drop: number of bytes still to drop (fault injection)
 * @feed: branch content from a test; without one (@feed.buf NULL), the
 *        built-in loop runs
 * @pace: the program is paced by the trace's consumer (debugfs "pace"):
 *        it blocks, rather than run, whenever its next packets could fill
 *        the region of a ToPA STOP entry (ipt_sim_run()); like @feed, a
 *        property of the program, so a reset keeps it
 * @gp_ctl: fault injection (debugfs "gp_ctl"): the next write of
 *        IA32_RTIT_CTL that clears TraceEn (bit 0: a 1 to 0 transition)
 *        or sets it (bit 1: 0 to 1) is #GP, once; a write that leaves
 *        TraceEn as it was does not count; with bit 2, only one made in hard-interrupt context
 *        (ipt_sim_op() hides bits 0 and 1 from any other)
 * @hold: the unit's internal buffer (struct ipt_sim_hold), or NULL: no
 *        buffering; like @feed, kept by a reset
 * @bulk: NULL, or IPT_SIM_BULK_CHUNK bytes of scratch: the built-in loop
 *        then runs in bulk (ipt_sim_run()), its packets put together in
 *        @bulk and written in large units; set by the owner before each
 *        ipt_sim_run(), kept by a reset
 * @lost_before: @stats.stopped summed over earlier resets, so that the
 *        backend's lost-bytes count (struct ipt_hw_ops.lost_bytes) never
 *        goes back
 * @stats: counters
 *
 * Locking: none inside; the owner serialises every call on one state.
 */
struct ipt_sim_cpu {
	const struct ipt_sim_model *model;
	u64 ctl;
	u64 status;
	u64 output_base;
	u64 output_mask;
	u64 cr3_match;
	u64 addr_a[4];
	u64 addr_b[4];
	u64 global_status;
	bool lvt_masked;
	u64 xss;
	u64 tsc;
	u64 ran_tsc;
	u64 last_mtc_ctc;
	u64 last_cyc_tsc;
	u64 ip;
	bool packet_en;
	bool feed_ctx_off;
	bool pge_pending;
	bool foreign;
	bool stuck;
	bool stuck_pending;
	bool vmx_on;
	bool pmi_pending;
	bool ovf_pending;
	u64 drop;
	struct ipt_sim_feed feed;
	bool pace;
	u8 gp_ctl;
	struct ipt_sim_hold *hold;
	u8 *bulk;
	u64 lost_before;
	struct ipt_sim_stats stats;
};

/* struct ipt_sim_cpu.gp_ctl bits */
#define IPT_SIM_GP_CTL_CLEAR	BIT(0)
#define IPT_SIM_GP_CTL_SET	BIT(1)
/* Only a write in hard-interrupt context (a cross-CPU call) faults. */
#define IPT_SIM_GP_CTL_IRQ	BIT(2)

extern const struct ipt_sim_model ipt_sim_models[];
extern const unsigned int ipt_sim_nr_models;
extern const u8 ipt_sim_code[];
extern const size_t ipt_sim_code_size;

/* ipt_sim_models.c: the models and CPUID */
const struct ipt_sim_model *ipt_sim_model_by_name(const char *name);
void ipt_sim_cpuid(const struct ipt_sim_model *m, u32 leaf, u32 subleaf,
		   struct ipt_cpuid_regs *r);
unsigned int ipt_sim_nr_ranges(const struct ipt_sim_model *m);
u64 ipt_sim_user_cr3(const struct ipt_sim_model *m);
u64 ipt_sim_platform(const struct ipt_sim_model *m);

/* ipt_sim_msr.c: reset state, MSRs, XSAVES */
void ipt_sim_cpu_init(struct ipt_sim_cpu *c, const struct ipt_sim_model *m);
int ipt_sim_rdmsr(struct ipt_sim_cpu *c, u32 msr, u64 *val);
int ipt_sim_wrmsr(struct ipt_sim_cpu *c, u32 msr, u64 val);
int ipt_sim_xsaves(struct ipt_sim_cpu *c, void *area);
int ipt_sim_xrstors(struct ipt_sim_cpu *c, const void *area);
void ipt_sim_global_ack(struct ipt_sim_cpu *c, u64 val);

/* ipt_sim_life.c: power loss, a stuck unit */
bool ipt_sim_power_loss(struct ipt_sim_cpu *c);
int ipt_sim_set_stuck(struct ipt_sim_cpu *c, bool stuck);
void ipt_sim_set_vmx(struct ipt_sim_cpu *c, bool on);

/* ipt_sim_trace.c: what is traced, and when */
void ipt_sim_trace_enable(struct ipt_sim_cpu *c);
void ipt_sim_trace_disable(struct ipt_sim_cpu *c);
void ipt_sim_run(struct ipt_sim_cpu *c, u64 budget);
void ipt_sim_switch_out(struct ipt_sim_cpu *c);

/* ipt_sim_output.c: the output engine */
bool ipt_sim_output_on(const struct ipt_sim_cpu *c);
bool ipt_sim_output_stopped(const struct ipt_sim_cpu *c);
void ipt_sim_put(struct ipt_sim_cpu *c, const u8 *p, size_t n);
u64 ipt_sim_room_before_stop(const struct ipt_sim_cpu *c, u64 limit);
void ipt_sim_force_error(struct ipt_sim_cpu *c);
void ipt_sim_hold_flush(struct ipt_sim_cpu *c);
void ipt_sim_hold_drop(struct ipt_sim_cpu *c);

/* ipt_sim_packets.c: packet encoders */
size_t ipt_sim_pkt_psb(u8 *p);
size_t ipt_sim_pkt_psbend(u8 *p);
size_t ipt_sim_pkt_tsc(u8 *p, u64 tsc);
size_t ipt_sim_pkt_tma(u8 *p, u16 ctc, u16 fc);
size_t ipt_sim_pkt_cbr(u8 *p, u8 ratio);
size_t ipt_sim_pkt_mode_exec(u8 *p);
size_t ipt_sim_pkt_ip(u8 *p, u8 type, u64 ip);
size_t ipt_sim_pkt_mtc(u8 *p, u8 ctc);
size_t ipt_sim_pkt_cyc(u8 *p, u64 cycles);
size_t ipt_sim_pkt_ovf(u8 *p);

/* ipt_sim_pcpu.c: the output timer's rest after a long tick, kept across a stop */
u64 ipt_sim_tick_rest(u64 period_ns, u64 took_ns, bool bulk);
u64 ipt_sim_start_delay(u64 period_ns, u64 now_ns, u64 rest_until_ns);

/* ipt_sim_pcpu.c: the live units, for KUnit */
#if IS_ENABLED(CONFIG_KUNIT)
const struct ipt_hw_ops *ipt_sim_live_ops(void);
u64 ipt_sim_live_rate(u64 rate);
void ipt_sim_live_state(unsigned int cpu, struct ipt_sim_cpu *st);
#endif

/* ipt_sim_nmi.c: the perf-like NMI handler (debugfs "perf_nmi", KUnit) */
void ipt_sim_perf_nmi_set(bool on);

/*
 * Whether packets that carry the current IP may be written now: PacketEn,
 * and the program inside the traced context.
 */
static inline bool ipt_sim_ip_valid(const struct ipt_sim_cpu *c)
{
	return c->packet_en && !c->feed_ctx_off;
}

/* Low five bits of byte 0 of the IP packets. */
#define IPT_SIM_PKT_TIP		0x0d
#define IPT_SIM_PKT_TIP_PGE	0x11
#define IPT_SIM_PKT_TIP_PGD	0x01
#define IPT_SIM_PKT_FUP		0x1d
/* ipt_sim_pkt_ip(): no IP payload (IPBytes 000). */
#define IPT_SIM_IP_NONE		(~0ULL)

#endif /* _IPT_SIM_H */
