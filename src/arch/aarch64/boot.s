// cachescope boot: the only assembly that runs before Rust.
//
// Entered at EL3, EL2 or EL1 with x0 = DTB pointer (or 0). Every exception level we pass through
// gets FP/SIMD enabled (the target uses NEON in ordinary Rust code); we then drop to EL1h,
// park secondary cores, set the stack, zero BSS, install the EL1 vectors and call
// `kernel_entry(dtb, entry_el)`.

.section .text._start, "ax"
.global _start
_start:
    mov     x19, x0                     // x19 = DTB pointer from the loader (0 on QEMU ELF boot)
    mrs     x20, CurrentEL
    lsr     x20, x20, #2                // x20 = entry EL (1, 2 or 3)

    // Park every core but the boot core: Aff0 == 0 and Aff1 == 0 (Pi 5 numbers cores in Aff1).
    mrs     x1, mpidr_el1
    and     x1, x1, #0xffff
    cbz     x1, 1f
    b       cs_park_secondary
1:
    // TPIDR_EL1 = the core identity a cache model with several vCPUs reads (marker protocol 5,
    // cachescope_arch::marker::core_id_value): tag | core 0. Nothing else uses TPIDR_EL1.
    movz    x1, #0x6373, lsl #48
    movk    x1, #0x6964, lsl #32
    msr     tpidr_el1, x1
    adr     x21, el1_setup              // x21 = where the EL1 part of the boot continues
drop_to_el1:
    cmp     x20, #3
    b.eq    el3_setup
    cmp     x20, #2
    b.eq    el2_setup
    br      x21

el3_setup:
    msr     cptr_el3, xzr               // no FP/SIMD, SVE or SME traps from EL3
    msr     mdcr_el3, xzr               // PMU and debug usable from lower ELs (non-secure)
    // SCR_EL3: NS=1, RES1 bits 5:4, SMD=1 (no SMC from EL1 traps), HCE=1, RW=1 (lower EL AArch64).
    mov     x1, #0x5b1
    msr     scr_el3, x1
    mrs     x1, id_aa64pfr0_el1
    ubfx    x1, x1, #8, #4              // EL2 field: 0 = EL2 not implemented
    cbz     x1, 2f
    mov     x1, #0x3c9                  // EL2h, DAIF masked
    msr     spsr_el3, x1
    adr     x1, el2_setup
    msr     elr_el3, x1
    eret
2:
    bl      el1_sysregs_reset
    mov     x1, #0x3c5                  // EL1h, DAIF masked
    msr     spsr_el3, x1
    msr     elr_el3, x21
    eret

el2_setup:
    mov     x1, #0x33ff                 // CPTR_EL2: RES1 bits, TFP=0 (no FP/SIMD trap)
    msr     cptr_el2, x1
    mov     x1, #(1 << 31)              // HCR_EL2.RW: EL1 is AArch64; no stage 2, no traps
    msr     hcr_el2, x1
    mov     x1, #3                      // CNTHCTL_EL2: EL1PCTEN | EL1PCEN
    msr     cnthctl_el2, x1
    msr     cntvoff_el2, xzr
    mrs     x1, pmcr_el0
    ubfx    x1, x1, #11, #5             // PMCR_EL0.N
    msr     mdcr_el2, x1                // HPMN = N: EL1 owns every counter, no PMU traps
    msr     vttbr_el2, xzr
    bl      el1_sysregs_reset
    mov     x1, #0x3c5                  // EL1h, DAIF masked
    msr     spsr_el2, x1
    msr     elr_el2, x21
    eret

// Known state for EL1: MMU, caches and alignment checks off (RES1 bits of SCTLR_EL1 set).
el1_sysregs_reset:
    ldr     x1, =0x30d00800
    msr     sctlr_el1, x1
    isb
    ret

el1_setup:
    bl      el1_sysregs_reset
    mov     x1, #(3 << 20)              // CPACR_EL1.FPEN = 0b11
    msr     cpacr_el1, x1
    isb
    ldr     x1, =__stack_top
    mov     sp, x1
    ldr     x1, =__bss_start
    ldr     x2, =__bss_end
3:  cmp     x1, x2
    b.hs    4f
    stp     xzr, xzr, [x1], #16
    b       3b
4:
    ldr     x1, =cs_vectors
    msr     vbar_el1, x1
    isb
    mov     x0, x19
    mov     x1, x20
    bl      kernel_entry
5:  wfe
    b       5b

// Secondary cores wait here. The board code may release them through its spin table or PSCI;
// until then they sleep in WFE.
.global cs_park_secondary
cs_park_secondary:
    wfe
    b       cs_park_secondary

// A released secondary core starts here (spin table: x0 = 0; PSCI CPU_ON: x0 = context), at
// EL3, EL2 or EL1. It takes the same way down to EL1h as the boot core, then reads its launch
// slot (cs_secondary_slots in smp.rs: 32 bytes = stack top, entry, arg) indexed by
// MPIDR Aff0 | Aff1, and calls entry(arg). An empty slot parks the core.
.global cs_secondary_entry
cs_secondary_entry:
    // TPIDR_EL1 = tag | core number (marker protocol 5), first, so that a cache model with
    // several vCPUs attributes everything after this TB to this core. x0 is kept.
    mrs     x1, mpidr_el1
    ubfx    x2, x1, #0, #8              // Aff0
    ubfx    x3, x1, #8, #8              // Aff1
    orr     x2, x2, x3
    movz    x1, #0x6373, lsl #48
    movk    x1, #0x6964, lsl #32
    orr     x1, x1, x2
    msr     tpidr_el1, x1
    mrs     x20, CurrentEL
    lsr     x20, x20, #2
    adr     x21, el1_secondary
    b       drop_to_el1

el1_secondary:
    bl      el1_sysregs_reset
    mov     x1, #(3 << 20)              // CPACR_EL1.FPEN = 0b11
    msr     cpacr_el1, x1
    isb
    mrs     x1, mpidr_el1
    ubfx    x2, x1, #0, #8              // Aff0
    ubfx    x3, x1, #8, #8              // Aff1
    orr     x2, x2, x3                  // core number (one of the two fields is 0)
    cmp     x2, #8                      // MAX_CORES (cachescope_arch::cpuid; asserted in smp.rs)
    b.hs    cs_park_secondary
    ldr     x1, =cs_secondary_slots
    add     x1, x1, x2, lsl #5
    ldr     x3, [x1]                    // stack top
    cbz     x3, cs_park_secondary
    mov     sp, x3
    ldr     x3, =cs_vectors
    msr     vbar_el1, x3
    isb
    ldr     x0, [x1, #16]               // arg
    ldr     x3, [x1, #8]                // entry
    blr     x3
    b       cs_park_secondary
