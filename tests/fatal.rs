//! Test kernel: an exception outside any trap catcher ends the run with status 3 through the
//! board's exit, which `boot_info::init` registered with the exception handler (the handler
//! itself knows no board). Under QEMU the run's exit status is that status.

#![no_std]
#![no_main]

use cachescope::cpu;

#[no_mangle]
extern "C" fn kernel_entry(x0: usize, entry_el: u64) -> ! {
    let _boot = cachescope::boot_info::init(x0, entry_el);
    cachescope::println!("# fatal: an undefined instruction outside any catcher");
    cpu::undefined_instruction();
    cachescope::println!("# fatal: the undefined instruction returned");
    cpu::park()
}
