// Two hobby-servo outputs on Timer1 hardware PWM: servo 1 on D9 (PB1/OC1A), servo 2 on D10 (PB2/OC1B).
//
// Fast PWM mode 14 (TOP = ICR1 = 39999) with prescaler 8 at 16 MHz gives a 20 ms (50 Hz) frame and
// 0.5 us per timer tick. The pulse edges come from the timer hardware, so they carry no interrupt jitter.
// A detached servo has its compare output disconnected and its pin driven low: no pulses at all.
#ifndef ROBOHAL_SERVO_TIMER1_H
#define ROBOHAL_SERVO_TIMER1_H

#include <Arduino.h>

// Ticks of the longest legal pulse (2500 us) plus margin, and the last tick before the frame wraps.
// Output changes are made between these two, when no pulse can be in progress, so a change never
// truncates or stretches a pulse on the pin.
static const uint16_t SERVO_SAFE_FROM_TICK = 5200;
static const uint16_t SERVO_SAFE_UNTIL_TICK = 39600;

static void servoBegin() {
  TCCR1B = 0;                                  // stop the timer while configuring
  TCCR1A = (1 << WGM11);                       // WGM 14 low bits, both outputs disconnected
  TCCR1B = (1 << WGM13) | (1 << WGM12);
  ICR1 = 39999;                                // 40000 ticks of 0.5 us = 20 ms
  TCNT1 = 0;
  PORTB &= ~((1 << PB1) | (1 << PB2));         // a disconnected output pin sits low
  DDRB |= (1 << PB1) | (1 << PB2);
  TCCR1B |= (1 << CS11);                       // prescaler 8: start
}

static uint16_t servoTimerTicks() {
  uint8_t sreg = SREG;
  cli();                                       // 16-bit register read uses the shared TEMP byte
  uint16_t t = TCNT1;
  SREG = sreg;
  return t;
}

static void servoWaitSafeWindow() {
  // Waits at most one pulse length (about 2.6 ms).
  for (;;) {
    uint16_t t = servoTimerTicks();
    if (t > SERVO_SAFE_FROM_TICK && t < SERVO_SAFE_UNTIL_TICK) return;
  }
}

// Sets both outputs at once. widthUs must already be within the 500-2500 us envelope when on.
// In fast PWM the pin is high from BOTTOM through the compare match, i.e. OCR1x + 1 ticks.
static void servoOutput(uint16_t widthUs1, bool on1, uint16_t widthUs2, bool on2) {
  servoWaitSafeWindow();
  uint8_t a = TCCR1A & ~((1 << COM1A1) | (1 << COM1A0) | (1 << COM1B1) | (1 << COM1B0));
  uint8_t sreg = SREG;
  cli();                                       // the sequence below must not be stretched
  if (on1) OCR1A = widthUs1 * 2 - 1;
  if (on2) OCR1B = widthUs2 * 2 - 1;
  // simavr 1.6 takes new OCR1x values in fast PWM only when the timer clock restarts, and the
  // restart also restarts the 20 ms frame. So: outputs off (the pins are low in the safe window
  // anyway), pause and restart the clock, put the count back to keep the frame's phase, outputs
  // on. On the chip OCR1x is double-buffered and the pause and write-back shift the frame by about
  // one 0.5 us tick; the widths are untouched and no compare match is near to be blocked.
  TCCR1A = a;
  uint16_t t = TCNT1;
  uint8_t b = TCCR1B;
  TCCR1B = b & ~((1 << CS12) | (1 << CS11) | (1 << CS10));
  TCCR1B = b;
  TCNT1 = t + 1;
  if (on1) a |= (1 << COM1A1);                 // non-inverting: set at BOTTOM, clear on match
  if (on2) a |= (1 << COM1B1);
  TCCR1A = a;
  SREG = sreg;
}

#endif
