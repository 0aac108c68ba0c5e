// tests/foreign/foreign.S — a small firmware that knows nothing of cachescope: no markers, no
// TPIDR tag, its own page tables, its own UART output, its own exit. It is what the cache model
// must understand unaided (issue #21 item 7). One source, assembled with --defsym for each image
// (`cachescope-xtask foreign build`, host/xtask/src/foreign.rs):
//
//   EL=1|2|3        the exception level it is entered at and runs at (QEMU virt: default,
//                   virtualization=on, secure=on); every system register of its own regime
//                   (SCTLR/TCR/MAIR/TTBR0_ELx) is written through the `elx` macros below
//   BROKEN_CLEAN    no DC CVAC before reading the buffer through its Non-cacheable alias
//   BROKEN_IC       no IC IVAU after writing code that is then executed
//   BROKEN_SETWAY   the set/way clean before the MMU-off read cleans level 1 only, not to LoC
//
// With none of the three it is correct: the cache model must report nothing. Each BROKEN_*
// plants exactly one hazard; tests/foreign/expect/*.toml name its kind, function and line.
//
// Memory (4 KiB granule, T0SZ = 32: the walk starts at level 1, 1 GiB per entry):
//   VA 0x0000_0000 .. 0x3fff_ffff  Device-nGnRE block (the PL011 at 0x0900_0000), execute-never
//   VA 0x4000_0000 .. 0x7fff_ffff  Normal write-back, 512 level-2 blocks of 2 MiB (identity)
//   VA 0x8000_0000 .. 0xbfff_ffff  Normal Non-cacheable block aliasing PA 0x4000_0000 (ALIAS)
// Exit: PSCI SYSTEM_OFF through QEMU's own PSCI (EL1: HVC; EL2: SMC, QEMU's conduit with
// virtualization=on); at EL3 QEMU has no PSCI (firmware would provide it), so semihosting
// SYS_EXIT (QEMU needs -semihosting-config enable=on). A run that fails its own checks exits
// with status 1 through semihosting where it can, else prints "FAILED" and powers off.

        .ifndef EL
        .error "assemble with --defsym EL=1, 2 or 3"
        .endif

        .equ UART_BASE,  0x09000000
        .equ UART_DR,    0x00
        .equ UART_FR,    0x18
        .equ UART_CR,    0x30
        .equ UART_TXFF,  (1 << 5)
        .equ ALIAS,      0x40000000          // NC alias VA minus PA
        .equ PATTERN,    0x464f524549474e31  // "FOREIGN1": differs from what memory holds (0)

        // MAIR: attr0 Device-nGnRE, attr1 Normal WB read/write-allocate, attr2 Normal NC.
        .equ MAIR_VALUE, 0x0044ff04
        // Block descriptor low attributes: valid block, AttrIndx, SH (inner shareable), AF.
        .equ DESC_DEVICE, (0x1 | (0 << 2) | (1 << 10) | (1 << 54) | (((EL == 1) & 1) << 53))  // XN (EL1: UXN+PXN)
        .equ DESC_WB,     (0x1 | (1 << 2) | (3 << 8) | (1 << 10))
        .equ DESC_NC,     (0x1 | (2 << 2) | (3 << 8) | (1 << 10))
        .equ DESC_TABLE,  0x3
        // TCR: T0SZ 32, IRGN0/ORGN0 write-back allocate, SH0 inner, TG0 4 KiB, 32-bit PA.
        .equ TCR_COMMON,  (32 | (1 << 8) | (1 << 10) | (3 << 12))
        .if EL == 1
        .equ TCR_VALUE,   (TCR_COMMON | (1 << 23))                // EPD1: no TTBR1 walks
        .else
        .equ TCR_VALUE,   (TCR_COMMON | (1 << 23) | (1 << 31))    // RES1 bits of TCR_EL2/EL3
        .endif
        .equ SCTLR_M, (1 << 0)
        .equ SCTLR_C, (1 << 2)
        .equ SCTLR_I, (1 << 12)
        .equ PSCI_SYSTEM_OFF, 0x84000008
        .equ SEMI_SYS_EXIT,   0x18
        .equ ADP_STOPPED_APP_EXIT, 0x20026

// ---- the regime of this image's EL -------------------------------------------------------
        .macro elx_write reg, xn
        .if EL == 1
        msr     \reg\()_el1, \xn
        .elseif EL == 2
        msr     \reg\()_el2, \xn
        .else
        msr     \reg\()_el3, \xn
        .endif
        .endm
        .macro elx_read xn, reg
        .if EL == 1
        mrs     \xn, \reg\()_el1
        .elseif EL == 2
        mrs     \xn, \reg\()_el2
        .else
        mrs     \xn, \reg\()_el3
        .endif
        .endm
        .macro tlbi_elx
        .if EL == 1
        tlbi    vmalle1
        .elseif EL == 2
        tlbi    alle2
        .else
        tlbi    alle3
        .endif
        .endm

        // A function symbol (type and size), so a PC resolves to its name.
        .macro func name
        .section .text.\name, "ax"
        .balign 4
        .global \name
        .type   \name, %function
\name:
        .endm
        .macro endfunc name
        .size   \name, . - \name
        .endm

// ---- entry --------------------------------------------------------------------------------
// Calls nest two deep at most and no function touches a stack: the link register of a test is
// kept in x28 while it calls the leaf helpers (which use x0-x15 only).
        func _start
        mrs     x0, CurrentEL
        lsr     x0, x0, #2
        cmp     x0, #EL
        b.ne    wrong_el
        bl      uart_init
        adr     x0, msg_start
        bl      puts
        bl      mmu_on
        ldr     x20, =PATTERN
        bl      alias_test                    // each test returns what it read
        cmp     x0, x20
        b.ne    failed
        bl      code_patch_test
        cmp     x0, #0x12
        b.ne    failed
        bl      mmu_off_test
        cmp     x0, x20
        b.ne    failed
        adr     x0, msg_done
        bl      puts
        mov     x0, #0
        b       power_off
failed:
wrong_el:
        mov     x0, #1
        b       power_off
        endfunc _start

// ---- the console (leaves) -------------------------------------------------------------------
        func uart_init
        ldr     x1, =UART_BASE
        mov     w2, #0x301                   // UARTEN | TXE | RXE
        str     w2, [x1, #UART_CR]
        ret
        endfunc uart_init

        // puts(x0 = NUL-terminated string)
        func puts
        ldr     x1, =UART_BASE
1:      ldrb    w2, [x0], #1
        cbz     w2, 3f
2:      ldr     w3, [x1, #UART_FR]
        tbnz    w3, #5, 2b
        strb    w2, [x1, #UART_DR]
        b       1b
3:      ret
        endfunc puts

        // put_hex(x0 = value): 16 hex digits and a newline
        func put_hex
        ldr     x1, =UART_BASE
        mov     x4, #60
1:      lsr     x2, x0, x4
        and     x2, x2, #0xf
        cmp     x2, #10
        add     x3, x2, #'0'
        add     x5, x2, #('a' - 10)
        csel    x2, x3, x5, lo
2:      ldr     w3, [x1, #UART_FR]
        tbnz    w3, #5, 2b
        strb    w2, [x1, #UART_DR]
        subs    x4, x4, #4
        b.pl    1b
        mov     w2, #'\n'
3:      ldr     w3, [x1, #UART_FR]
        tbnz    w3, #5, 3b
        strb    w2, [x1, #UART_DR]
        ret
        endfunc put_hex

// ---- translation tables and the MMU ---------------------------------------------------------
        // Built with the MMU and caches off (the writes go to memory), then the MMU, D-cache
        // and I-cache on for this EL's regime.
        func mmu_on
        adr     x0, l1_table
        ldr     x1, =DESC_DEVICE              // [0] 0x0000_0000: Device
        str     x1, [x0]
        adr     x2, l2_table                  // [1] 0x4000_0000: the level-2 table
        orr     x1, x2, #DESC_TABLE
        str     x1, [x0, #8]
        ldr     x1, =(0x40000000 | DESC_NC)   // [2] 0x8000_0000: NC alias of 0x4000_0000
        str     x1, [x0, #16]
        str     xzr, [x0, #24]
        ldr     x1, =(0x40000000 | DESC_WB)   // level 2: 512 blocks of 2 MiB, identity
        mov     x3, #512
1:      str     x1, [x2], #8
        add     x1, x1, #0x200000
        subs    x3, x3, #1
        b.ne    1b
        dsb     sy
        ldr     x1, =MAIR_VALUE
        elx_write mair, x1
        ldr     x1, =TCR_VALUE
        elx_write tcr, x1
        elx_write ttbr0, x0
        isb
        tlbi_elx
        ic      iallu
        dsb     sy
        isb
        elx_read x1, sctlr
        ldr     x2, =(SCTLR_M | SCTLR_C | SCTLR_I)
        orr     x1, x1, x2
        elx_write sctlr, x1
        isb
        ret
        endfunc mmu_on

        // fill_buffer(x0 = address): PATTERN into its first 8 bytes, through the cacheable map.
        func fill_buffer
        ldr     x1, =PATTERN
        str     x1, [x0]                      // the write a missing clean leaves in the cache
        ret
        endfunc fill_buffer

// ---- (a) a hand-off through a Non-cacheable alias of the same PA ---------------------------
        func alias_test
        mov     x28, x30
        adr     x0, msg_alias
        bl      puts
        adr     x0, alias_buf
        bl      fill_buffer
        adr     x0, alias_buf
        .ifndef BROKEN_CLEAN
        dc      cvac, x0                      // clean to PoC: the NC reader sees memory
        .endif
        dsb     sy
        bl      alias_read
        bl      put_hex
        mov     x30, x28
        ret
        endfunc alias_test

        // alias_read(x0 = address): the 8 bytes at its NC alias.
        func alias_read
        ldr     x1, =ALIAS
        ldr     x0, [x0, x1]                  // the NC read (planted: BROKEN_CLEAN)
        ret
        endfunc alias_read

// ---- (b) code written, then executed -------------------------------------------------------
        func code_patch_test
        mov     x28, x30
        adr     x0, msg_code
        bl      puts
        bl      patched_fn                    // the old code: 1 (and its line in the I-cache)
        mov     x27, x0
        bl      patch_code
        bl      patched_fn                    // the new code: 2
        add     x0, x0, x27, lsl #4           // 0x12: old then new
        bl      put_hex
        mov     x30, x28
        ret
        endfunc code_patch_test

        func patch_code
        adr     x0, patched_fn
        ldr     w1, template_insn
        str     w1, [x0]                      // the D-side write of an instruction
        dc      cvau, x0                      // clean to PoU
        dsb     ish
        .ifndef BROKEN_IC
        ic      ivau, x0                      // invalidate the I-side's old copy
        dsb     ish
        .endif
        isb
        ret
        endfunc patch_code

        // The code that is rewritten: a line of its own (nothing else is fetched from it).
        .section .text.patched_fn, "ax"
        .balign 64
        .global patched_fn
        .type   patched_fn, %function
patched_fn:
        mov     w0, #1                        // the rewritten instruction (planted: BROKEN_IC)
        ret
        .size   patched_fn, . - patched_fn
        .balign 64

// ---- (c) a set/way clean, then a read with the MMU and caches off --------------------------
        func mmu_off_test
        mov     x28, x30
        adr     x0, msg_setway
        bl      puts
        adr     x0, setway_buf
        bl      fill_buffer
        .ifdef BROKEN_SETWAY
        mov     x0, #1                        // level 1 only: the line stays dirty in L2
        .else
        mov     x0, #7                        // every level to LoC
        .endif
        bl      dcsw_clean
        elx_read x1, sctlr
        ldr     x2, =(SCTLR_M | SCTLR_C)
        bic     x1, x1, x2
        elx_write sctlr, x1
        isb
        adr     x0, setway_buf
        ldr     x0, [x0]                      // the MMU-off read (planted: BROKEN_SETWAY)
        bl      put_hex
        mov     x30, x28
        ret
        endfunc mmu_off_test

        // dcsw_clean(x0 = levels): DC CSW over every set and way of the data and unified caches
        // of levels 1..min(x0, CLIDR_EL1.LoC), TF-A's do_dcsw_op shape: CSSELR write then ISB,
        // DSB after each level, CSSELR restored, DSB + ISB at the end; CCSIDR in the 64-bit
        // format when ID_AA64MMFR2_EL1.CCIDX says so.
        func dcsw_clean
        mrs     x9, clidr_el1
        ubfx    x10, x9, #24, #3              // LoC
        cmp     x0, x10
        csel    x10, x0, x10, lo
        mrs     x1, id_aa64mmfr2_el1
        ubfx    x15, x1, #20, #4              // CCIDX
        mov     x11, #0                       // level - 1
1:      cmp     x11, x10
        b.hs    5f
        add     x12, x11, x11, lsl #1
        lsr     x12, x9, x12
        and     x12, x12, #7                  // Ctype of this level
        cmp     x12, #2
        b.lo    4f                            // no data cache here
        lsl     x12, x11, #1
        msr     csselr_el1, x12
        isb
        mrs     x13, ccsidr_el1
        and     x1, x13, #7
        add     x1, x1, #4                    // log2(line bytes)
        cbnz    x15, 6f
        ubfx    x2, x13, #3, #10              // ways - 1
        ubfx    x3, x13, #13, #15             // sets - 1
        b       7f
6:      ubfx    x2, x13, #3, #21
        ubfx    x3, x13, #32, #24
7:      clz     w4, w2                        // way shift (32 for one way: the field is 0)
2:      mov     x5, x3                        // set
3:      lsl     x6, x2, x4
        lsl     x7, x5, x1
        orr     x6, x6, x7
        orr     x6, x6, x12
        dc      csw, x6
        subs    x5, x5, #1
        b.pl    3b
        subs    x2, x2, #1
        b.pl    2b
        dsb     sy
4:      add     x11, x11, #1
        b       1b
5:      msr     csselr_el1, xzr
        dsb     sy
        isb
        ret
        endfunc dcsw_clean

// ---- exit ----------------------------------------------------------------------------------
        // power_off(x0 = status): never returns.
        func power_off
        mov     x19, x0
        cbz     x19, 1f
        adr     x0, msg_failed
        bl      puts
1:
        .if EL == 3
        adr     x1, exit_block
        str     x19, [x1, #8]
        mov     x0, #SEMI_SYS_EXIT
        hlt     #0xf000
        .elseif EL == 2
        ldr     x0, =PSCI_SYSTEM_OFF
        smc     #0
        .else
        ldr     x0, =PSCI_SYSTEM_OFF
        hvc     #0
        .endif
2:      wfe
        b       2b
        endfunc power_off

        .section .rodata, "a"
        .balign 4
template_insn:
        mov     w0, #2                        // what patched_fn's first instruction becomes
msg_start:  .asciz "foreign: start\n"
msg_alias:  .asciz "foreign: NC alias read: "
msg_code:   .asciz "foreign: rewritten code returned (old, new): "
msg_setway: .asciz "foreign: MMU-off read after set/way clean: "
msg_done:   .asciz "foreign: done\n"
msg_failed: .asciz "foreign: FAILED\n"

        .section .data, "aw"
        .balign 16
exit_block:
        .quad   ADP_STOPPED_APP_EXIT, 0

        .section .bss, "aw", %nobits
        .balign 4096
l1_table:   .space 4096
l2_table:   .space 4096
alias_buf:  .space 4096                       // a page of its own: nothing else shares its lines
setway_buf: .space 4096
