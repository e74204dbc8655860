// The servos' power switch ramped in as the Braccio library's soft start does (Braccio.h,
// Braccio.cpp _softStart: SOFT_START_CONTROL_PIN, D12 on the Braccio shield, is pulsed 80 us high
// and 450 us low until 2 s (LOW_LIMIT_TIMEOUT), then 75 us high and 430 us low until 6 s
// (HIGH_LIMIT_TIMEOUT), then held high: the shield's supply comes up over about 15 % duty first).
//
// The library waits in delayMicroseconds() through its begin(); here the edges are timed by
// Timer2's compare match B, so the line protocol keeps answering during the 6 s. Timer2 runs
// free (normal mode, prescaler 8: 0.5 us ticks) for the tool's pulse (servo_tool.h, compare
// match A); B steps through each level as A does, in steps of 128 to 255 ticks, so no match is
// missed. Both edges are written by the same code path, so a pulse is as long as its ticks; an
// edge due while another interrupt runs waits for it (servo_channels.h holds interrupts off for
// up to 40 us around each of its edges): a few pulses of the ramp come out that much longer or
// shorter, as the library's delayMicroseconds() ones do around the core's interrupts.
#ifndef ROBOHAL_SOFT_START_H
#define ROBOHAL_SOFT_START_H

#include <Arduino.h>
#include <avr/interrupt.h>

// Braccio.h / Braccio.cpp at the default level (SOFT_START_DEFAULT, 0), in 0.5 us ticks and ms.
static const uint16_t SOFT_FIRST_HIGH_TICKS = 160, SOFT_FIRST_LOW_TICKS = 900;    // 80 us, 450 us
static const uint16_t SOFT_SECOND_HIGH_TICKS = 150, SOFT_SECOND_LOW_TICKS = 860;  // 75 us, 430 us
static const uint16_t SOFT_FIRST_MS = 2000, SOFT_END_MS = 6000;

static volatile uint8_t *softPort;
static uint8_t softMask = 0;                   // 0: no ramp running
static bool softHigh = false;
static uint16_t softLeft = 0;                  // ticks of the running level after the armed compare
static uint32_t softStartMs = 0;

static uint8_t softStep(uint16_t left) {       // as toolStep(): the last step is 128 ticks or more
  if (left <= 255) return (uint8_t)left;
  if (left < 384) return (uint8_t)(left - 128);
  return 255;
}

static void softStartStop() {
  uint8_t sreg = SREG;
  cli();
  TIMSK2 &= ~(1 << OCIE2B);
  softMask = 0;
  SREG = sreg;
}

// Ramps `pin` (an output, low until now) in; softStartStop() or the 6 s end it.
static void softStartBegin(uint8_t pin) {
  uint8_t sreg = SREG;
  cli();
  softPort = portOutputRegister(digitalPinToPort(pin));
  softMask = digitalPinToBitMask(pin);
  *softPort &= ~softMask;
  *portModeRegister(digitalPinToPort(pin)) |= softMask;
  softStartMs = millis();
  softHigh = false;
  softLeft = 0;
  OCR2B = (uint8_t)(TCNT2 + 128);              // the first pulse rises 64 us from now
  TIFR2 = (1 << OCF2B);                        // a match from before does not count
  TIMSK2 |= (1 << OCIE2B);
  SREG = sreg;
}

ISR(TIMER2_COMPB_vect) {
  uint16_t left = softLeft;
  if (left == 0) {                             // the level's time is up: the next edge, by the same path
    bool rise = !softHigh;                     // both ways, so that a pulse is as long as its ticks
    if (rise) *softPort |= softMask;
    else *softPort &= ~softMask;
    softHigh = rise;
    uint32_t elapsed = millis() - softStartMs;
    if (rise && elapsed >= SOFT_END_MS) {      // held high from here on
      TIMSK2 &= ~(1 << OCIE2B);
      softMask = 0;
      return;
    }
    if (elapsed < SOFT_FIRST_MS) left = rise ? SOFT_FIRST_HIGH_TICKS : SOFT_FIRST_LOW_TICKS;
    else left = rise ? SOFT_SECOND_HIGH_TICKS : SOFT_SECOND_LOW_TICKS;
  }
  uint8_t step = softStep(left);
  softLeft = left - step;
  OCR2B = (uint8_t)(OCR2B + step);
}

#endif
