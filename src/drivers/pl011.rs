//! ARM PrimeCell PL011 UART (DDI 0183), transmit side, declared with tock-registers.

use tock_registers::{
    interfaces::{Readable, Writeable},
    register_bitfields, register_structs,
    registers::{ReadOnly, ReadWrite, WriteOnly},
};

register_bitfields! {
    u32,
    /// Flag register.
    FR [
        /// Transmit FIFO full.
        TXFF OFFSET(5) NUMBITS(1) [],
        /// UART busy transmitting.
        BUSY OFFSET(3) NUMBITS(1) []
    ],
    /// Integer baud rate divisor.
    IBRD [ BAUD_DIVINT OFFSET(0) NUMBITS(16) [] ],
    /// Fractional baud rate divisor.
    FBRD [ BAUD_DIVFRAC OFFSET(0) NUMBITS(6) [] ],
    /// Line control register.
    LCR_H [
        /// Word length.
        WLEN OFFSET(5) NUMBITS(2) [ EightBit = 0b11 ],
        /// FIFO enable.
        FEN OFFSET(4) NUMBITS(1) []
    ],
    /// Control register.
    CR [
        /// Receive enable.
        RXE OFFSET(9) NUMBITS(1) [],
        /// Transmit enable.
        TXE OFFSET(8) NUMBITS(1) [],
        /// UART enable.
        UARTEN OFFSET(0) NUMBITS(1) []
    ],
    /// Interrupt clear register.
    ICR [ ALL OFFSET(0) NUMBITS(11) [] ]
}

register_structs! {
    /// PL011 register block.
    #[allow(non_snake_case)]
    pub RegisterBlock {
        (0x00 => DR: ReadWrite<u32>),
        (0x04 => _reserved0),
        (0x18 => FR: ReadOnly<u32, FR::Register>),
        (0x1c => _reserved1),
        (0x24 => IBRD: WriteOnly<u32, IBRD::Register>),
        (0x28 => FBRD: WriteOnly<u32, FBRD::Register>),
        (0x2c => LCR_H: WriteOnly<u32, LCR_H::Register>),
        (0x30 => CR: WriteOnly<u32, CR::Register>),
        (0x34 => _reserved2),
        (0x44 => ICR: WriteOnly<u32, ICR::Register>),
        (0x48 => @END),
    }
}

/// Baud-rate divisors for a UART clock: IBRD and FBRD as defined by the PL011 TRM
/// (divisor = clock / (16 × baud), fraction rounded to 1/64).
pub const fn baud_divisors(uart_clock_hz: u32, baud: u32) -> (u32, u32) {
    // 64 × clock / (16 × baud) = 4 × clock / baud, rounded to nearest.
    let div64 = (4 * uart_clock_hz as u64 + baud as u64 / 2) / baud as u64;
    ((div64 >> 6) as u32, (div64 & 0x3f) as u32)
}

/// A PL011 at a fixed MMIO address.
pub struct Pl011 {
    base: usize,
}

impl Pl011 {
    /// Creates a driver for the PL011 whose registers start at `base`.
    ///
    /// # Safety
    /// `base` must be the address of a PL011 register block, mapped as Device memory (or the MMU
    /// off), and no other code may drive the same UART concurrently.
    pub const unsafe fn new(base: usize) -> Self {
        Self { base }
    }

    fn regs(&self) -> &RegisterBlock {
        // SAFETY: `new`'s contract: base points at a PL011 register block for the kernel's life.
        unsafe { &*(self.base as *const RegisterBlock) }
    }

    /// MMIO base address.
    pub fn base(&self) -> usize {
        self.base
    }

    /// Enables the transmitter and receiver without touching the divisors (what firmware set
    /// stays: QEMU ignores them, the Pi 5 firmware programs its own).
    pub fn enable(&self) {
        let r = self.regs();
        r.CR.write(CR::UARTEN::SET + CR::TXE::SET + CR::RXE::SET);
    }

    /// Full initialisation: 8n1, FIFOs on, divisors from `uart_clock_hz` for `baud`.
    pub fn init(&self, uart_clock_hz: u32, baud: u32) {
        let r = self.regs();
        self.flush();
        r.CR.set(0);
        r.ICR.write(ICR::ALL::CLEAR);
        let (ibrd, fbrd) = baud_divisors(uart_clock_hz, baud);
        r.IBRD.write(IBRD::BAUD_DIVINT.val(ibrd));
        r.FBRD.write(FBRD::BAUD_DIVFRAC.val(fbrd));
        r.LCR_H.write(LCR_H::WLEN::EightBit + LCR_H::FEN::SET);
        self.enable();
    }

    /// Waits until the transmitter is idle.
    pub fn flush(&self) {
        while self.regs().FR.is_set(FR::BUSY) {
            core::hint::spin_loop();
        }
    }

    /// Sends one byte, waiting for FIFO space.
    pub fn write_byte(&self, b: u8) {
        let r = self.regs();
        while r.FR.is_set(FR::TXFF) {
            core::hint::spin_loop();
        }
        r.DR.set(b as u32);
    }
}

impl core::fmt::Write for Pl011 {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.write_byte(b'\r');
            }
            self.write_byte(b);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::baud_divisors;

    #[test]
    fn pi4_48mhz_115200() {
        // PL011 TRM example arithmetic: 48e6 / (16 * 115200) = 26.0416 -> IBRD 26, FBRD 3.
        assert_eq!(baud_divisors(48_000_000, 115_200), (26, 3));
    }

    #[test]
    fn exact_divisor() {
        assert_eq!(baud_divisors(1_843_200, 115_200), (1, 0));
        assert_eq!(baud_divisors(3_000_000, 115_200), (1, 40));
    }
}
