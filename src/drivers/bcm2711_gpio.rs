//! BCM2711 (Raspberry Pi 4) GPIO: pin function select and pull control, declared with
//! tock-registers (BCM2711 ARM Peripherals, chapter 5). Only what the console needs: GPIO14
//! (TXD0) and GPIO15 (RXD0) to ALT0 = PL011 UART0, because the firmware gives UART0 to
//! Bluetooth by default.

use tock_registers::{interfaces::ReadWriteable, register_bitfields, register_structs, registers::ReadWrite};

register_bitfields! {
    u32,
    /// GPIO function select 1: pins 10..19, 3 bits each.
    GPFSEL1 [
        /// Pin 15: RXD0 on ALT0.
        FSEL15 OFFSET(15) NUMBITS(3) [ Input = 0b000, Output = 0b001, AltFunc0 = 0b100, AltFunc5 = 0b010 ],
        /// Pin 14: TXD0 on ALT0.
        FSEL14 OFFSET(12) NUMBITS(3) [ Input = 0b000, Output = 0b001, AltFunc0 = 0b100, AltFunc5 = 0b010 ]
    ],
    /// Pull-up/down control for pins 0..15, 2 bits each (BCM2711 only; the BCM2835 GPPUD
    /// sequence does not exist here).
    GPIO_PUP_PDN_CNTRL_REG0 [
        /// Pin 15.
        GPIO_PUP_PDN_CNTRL15 OFFSET(30) NUMBITS(2) [ NoResistor = 0b00, PullUp = 0b01, PullDown = 0b10 ],
        /// Pin 14.
        GPIO_PUP_PDN_CNTRL14 OFFSET(28) NUMBITS(2) [ NoResistor = 0b00, PullUp = 0b01, PullDown = 0b10 ]
    ]
}

register_structs! {
    /// The GPIO register block (the part used here).
    #[allow(non_snake_case)]
    pub RegisterBlock {
        (0x00 => _gpfsel0),
        (0x04 => GPFSEL1: ReadWrite<u32, GPFSEL1::Register>),
        (0x08 => _reserved0),
        (0xe4 => GPIO_PUP_PDN_CNTRL_REG0: ReadWrite<u32, GPIO_PUP_PDN_CNTRL_REG0::Register>),
        (0xe8 => @END),
    }
}

/// The BCM2711 GPIO block.
pub struct Gpio {
    base: usize,
}

impl Gpio {
    /// A driver for the GPIO block at `base` (0xFE20_0000 on the Pi 4 in low-peripheral mode).
    ///
    /// # Safety
    /// `base` must be the BCM2711 GPIO register block, mapped as Device memory (or MMU off),
    /// and no other code may change the same pins concurrently.
    pub const unsafe fn new(base: usize) -> Self {
        Self { base }
    }

    fn regs(&self) -> &RegisterBlock {
        // SAFETY: `new`'s contract: base points at the GPIO register block for the kernel's life.
        unsafe { &*(self.base as *const RegisterBlock) }
    }

    /// Routes PL011 UART0 to GPIO14 (TXD0, header pin 8) and GPIO15 (RXD0, header pin 10),
    /// both with pull-ups (an idle line is high). Other pins keep their functions.
    pub fn map_pl011_uart(&self) {
        let r = self.regs();
        r.GPFSEL1.modify(GPFSEL1::FSEL14::AltFunc0 + GPFSEL1::FSEL15::AltFunc0);
        r.GPIO_PUP_PDN_CNTRL_REG0
            .modify(GPIO_PUP_PDN_CNTRL_REG0::GPIO_PUP_PDN_CNTRL14::PullUp + GPIO_PUP_PDN_CNTRL_REG0::GPIO_PUP_PDN_CNTRL15::PullUp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tock_registers::{interfaces::Readable, registers::InMemoryRegister};

    #[test]
    fn alt0_on_14_and_15_keeps_other_pins() {
        // GPFSEL1 with pins 10..13 and 16..19 set to outputs: only the 14/15 fields change.
        // One octal digit per pin, 19 down to 10: outputs (001) but pins 15 and 14 (000).
        let others: u32 = 0o1_111_001_111;
        let reg = InMemoryRegister::<u32, GPFSEL1::Register>::new(others | (0b010 << 12) | (0b010 << 15));
        reg.modify(GPFSEL1::FSEL14::AltFunc0 + GPFSEL1::FSEL15::AltFunc0);
        assert_eq!(reg.get(), others | (0b100 << 12) | (0b100 << 15));
        assert_eq!(reg.read(GPFSEL1::FSEL14), 0b100);
    }

    #[test]
    fn pulls_up_on_14_and_15() {
        let reg = InMemoryRegister::<u32, GPIO_PUP_PDN_CNTRL_REG0::Register>::new(0x0aaa_aaaa | (0b10 << 28));
        reg.modify(GPIO_PUP_PDN_CNTRL_REG0::GPIO_PUP_PDN_CNTRL14::PullUp + GPIO_PUP_PDN_CNTRL_REG0::GPIO_PUP_PDN_CNTRL15::PullUp);
        assert_eq!(reg.get(), 0x0aaa_aaaa | (0b01 << 28) | (0b01 << 30));
    }
}
