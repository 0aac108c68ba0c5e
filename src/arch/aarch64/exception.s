// EL1 exception vectors, the register frame, and the trap-recovery pair used by the harness.
//
// Frame (288 bytes, on the interrupted stack): x0..x30 at 8*n, ELR at 248, SPSR at 256,
// ESR at 264, FAR at 272, interrupted SP at 280. Must match `ExceptionFrame` in exception.rs.

.macro CS_VECTOR kind
    .balign 0x80
    sub     sp, sp, #288
    stp     x0, x1, [sp, #0]
    mov     x0, #\kind
    b       cs_exception_common
.endm

.section .text.cs_vectors, "ax"
.balign 0x800
.global cs_vectors
cs_vectors:
    // Current EL with SP_EL0 (kinds 0..3), current EL with SP_ELx (4..7),
    // lower EL AArch64 (8..11), lower EL AArch32 (12..15). Each: sync, IRQ, FIQ, SError.
    CS_VECTOR 0
    CS_VECTOR 1
    CS_VECTOR 2
    CS_VECTOR 3
    CS_VECTOR 4
    CS_VECTOR 5
    CS_VECTOR 6
    CS_VECTOR 7
    CS_VECTOR 8
    CS_VECTOR 9
    CS_VECTOR 10
    CS_VECTOR 11
    CS_VECTOR 12
    CS_VECTOR 13
    CS_VECTOR 14
    CS_VECTOR 15

cs_exception_common:
    stp     x2, x3, [sp, #16]
    stp     x4, x5, [sp, #32]
    stp     x6, x7, [sp, #48]
    stp     x8, x9, [sp, #64]
    stp     x10, x11, [sp, #80]
    stp     x12, x13, [sp, #96]
    stp     x14, x15, [sp, #112]
    stp     x16, x17, [sp, #128]
    stp     x18, x19, [sp, #144]
    stp     x20, x21, [sp, #160]
    stp     x22, x23, [sp, #176]
    stp     x24, x25, [sp, #192]
    stp     x26, x27, [sp, #208]
    stp     x28, x29, [sp, #224]
    str     x30, [sp, #240]
    mrs     x1, elr_el1
    mrs     x2, spsr_el1
    stp     x1, x2, [sp, #248]
    mrs     x1, esr_el1
    mrs     x2, far_el1
    stp     x1, x2, [sp, #264]
    add     x1, sp, #288
    str     x1, [sp, #280]
    mov     x1, sp
    bl      cs_handle_exception         // (kind, &mut frame); may redirect ELR to cs_try_resume
    ldp     x1, x2, [sp, #248]
    msr     elr_el1, x1
    msr     spsr_el1, x2
    ldp     x0, x1, [sp, #0]
    ldp     x2, x3, [sp, #16]
    ldp     x4, x5, [sp, #32]
    ldp     x6, x7, [sp, #48]
    ldp     x8, x9, [sp, #64]
    ldp     x10, x11, [sp, #80]
    ldp     x12, x13, [sp, #96]
    ldp     x14, x15, [sp, #112]
    ldp     x16, x17, [sp, #128]
    ldp     x18, x19, [sp, #144]
    ldp     x20, x21, [sp, #160]
    ldp     x22, x23, [sp, #176]
    ldp     x24, x25, [sp, #192]
    ldp     x26, x27, [sp, #208]
    ldp     x28, x29, [sp, #224]
    ldr     x30, [sp, #240]
    add     sp, sp, #288
    eret

// u64 cs_try_call(void (*f)(void *), void *arg, JumpBuf *buf)
// Saves the callee-saved state in *buf, calls f(arg) and returns 0. If a trap is taken while f
// runs, the exception handler resumes at cs_try_resume(buf, code), which makes this call return
// `code` instead. JumpBuf: x19..x30 (0..95), sp (96), d8..d15 (104..167).
.section .text.cs_try, "ax"
.global cs_try_call
cs_try_call:
    stp     x19, x20, [x2, #0]
    stp     x21, x22, [x2, #16]
    stp     x23, x24, [x2, #32]
    stp     x25, x26, [x2, #48]
    stp     x27, x28, [x2, #64]
    stp     x29, x30, [x2, #80]
    mov     x3, sp
    str     x3, [x2, #96]
    stp     d8, d9, [x2, #104]
    stp     d10, d11, [x2, #120]
    stp     d12, d13, [x2, #136]
    stp     d14, d15, [x2, #152]
    mov     x19, x2
    mov     x3, x0
    mov     x0, x1
    blr     x3
    mov     x1, #0
    mov     x0, x19
    // fall through: restore and return 0

// cs_try_resume(JumpBuf *buf, u64 code): restore the state saved by cs_try_call; return `code`.
.global cs_try_resume
cs_try_resume:
    ldr     x3, [x0, #96]
    mov     sp, x3
    ldp     d8, d9, [x0, #104]
    ldp     d10, d11, [x0, #120]
    ldp     d12, d13, [x0, #136]
    ldp     d14, d15, [x0, #152]
    ldp     x19, x20, [x0, #0]
    ldp     x21, x22, [x0, #16]
    ldp     x23, x24, [x0, #32]
    ldp     x25, x26, [x0, #48]
    ldp     x27, x28, [x0, #64]
    ldp     x29, x30, [x0, #80]
    mov     x0, x1
    ret
