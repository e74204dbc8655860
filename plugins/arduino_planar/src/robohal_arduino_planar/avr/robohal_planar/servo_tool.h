// The third hobby-servo output, the tool (a gripper or a pen lift), on D6 (PD6).
//
// Timer1 has two hardware outputs and the arm's servos take both (servo_timer1.h), so this pulse
// is made by interrupts: it rises at every Timer1 frame start (TIMER1_OVF, every 20 ms, in step
// with the arm's pulses) and Timer2 (normal mode, prescaler 8: 0.5 us ticks, as Timer1) times its
// length, ending it in TIMER2_COMPA. Timer2 counts only to 255, so a pulse is timed in steps of
// 128 to 255 ticks: a step never ends sooner than 64 us after the interrupt that set it up, far
// longer than any interrupt's latency here, so no compare match is missed. Both edges are written
// by software: another interrupt that runs when an edge is due (millis() on Timer0, the serial
// port) delays that edge by its own length, a few microseconds; a servo's dead band (the SG90's
// is 10 us) does not see that.
// The Arduino core sets Timer2 up for analogWrite() on D3/D11 and Timer0's output to D6 only for
// analogWrite(6); this firmware uses none of them. D6 is on port D, away from D9/D10 on port B, so
// no write to the tool's pin touches the arm's port.
#ifndef ROBOHAL_SERVO_TOOL_H
#define ROBOHAL_SERVO_TOOL_H

#include <Arduino.h>
#include <avr/interrupt.h>

// The falling edge's interrupt takes longer from its compare match to its pin write than the
// rising edge's from its count read to its write: measured in simavr, equal tick counts made the
// pulse 1.4-2.0 us too long (the firmware's build flags fixed). Taken off each pulse.
static const uint8_t TOOL_EDGE_SKEW_TICKS = 3;

static volatile uint16_t toolTicks = 0;        // the pulse length in 0.5 us ticks; 0 = no pulses
static volatile uint16_t toolLeft = 0;         // ticks of the running pulse after the armed compare

// The next step of a running pulse: all that is left when it fits in one step, else a step that
// leaves at least 128 ticks for the last one.
static uint8_t toolStep(uint16_t left) {
  if (left <= 255) return (uint8_t)left;
  if (left < 384) return (uint8_t)(left - 128);
  return 255;
}

static void toolBegin() {
  PORTD &= ~(1 << PD6);                        // low, and an output: no pulses until TOOL
  DDRD |= (1 << PD6);
  TCCR2A = 0;                                  // normal mode, OC2A/OC2B disconnected
  TCCR2B = (1 << CS21);                        // prescaler 8
  TIMSK2 &= ~(1 << OCIE2A);                    // (compare match B is the power pin's soft start)
  TIFR1 = (1 << TOV1);                         // no stale frame start
  TIMSK1 |= (1 << TOIE1);                      // a pulse at each frame start
}

// Sets the tool's pulse (widthUs within the 500-2500 us envelope), or 0: no more pulses. A pulse
// in progress ends at its own width; the new one starts with the next frame.
static void toolOutput(uint16_t widthUs) {
  uint8_t sreg = SREG;
  cli();                                       // a 16-bit value the interrupt reads
  toolTicks = widthUs ? widthUs * 2 - TOOL_EDGE_SKEW_TICKS : 0;
  SREG = sreg;
}

ISR(TIMER1_OVF_vect) {
  uint16_t ticks = toolTicks;
  if (ticks == 0 || (TIMSK2 & (1 << OCIE2A))) return;  // off, or the last pulse still running
  uint8_t start = TCNT2;
  PORTD |= (1 << PD6);                         // the rising edge, at timer count `start`
  uint8_t step = toolStep(ticks);
  toolLeft = ticks - step;
  OCR2A = (uint8_t)(start + step);
  TIFR2 = (1 << OCF2A);                        // a match from before does not count
  TIMSK2 |= (1 << OCIE2A);
}

ISR(TIMER2_COMPA_vect) {
  uint16_t left = toolLeft;
  if (left == 0) {
    PORTD &= ~(1 << PD6);                      // the falling edge
    TIMSK2 &= ~(1 << OCIE2A);
    return;
  }
  uint8_t step = toolStep(left);
  toolLeft = left - step;
  OCR2A = (uint8_t)(OCR2A + step);
}

#endif
