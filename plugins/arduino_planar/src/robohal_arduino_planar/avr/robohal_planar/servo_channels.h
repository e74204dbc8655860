// Up to 12 hobby-servo outputs on any of D2..D13 and A0..A5, timed one after the other on Timer1,
// as Arduino's Servo library times them on an Uno (Servo.h: 12 servos per 16-bit timer).
//
// Used instead of servo_timer1.h and servo_tool.h once a host configures channels (the SERVO
// command): Timer1 then runs free in normal mode (prescaler 8: 0.5 us ticks, wrapping every
// 32.8 ms) and its compare match A interrupt walks a frame: channel 1's pulse rises, it falls
// as channel 2's rises, and so on; after the last, the next frame starts 20 ms after this one
// (later only when the widths add up to more than 19.5 ms: 12 pulses of 2.5 ms make a 30.5 ms
// frame, which hobby servos take).
//
// An edge written by an interrupt is late by whatever else was running when it was due: the
// Arduino core's millis() and serial interrupts take a few microseconds. So each interrupt is
// set up CHANNEL_LEAD_TICKS early, and then, interrupts off, waits for the edge's timer tick and
// writes both pins with a fixed code path: every edge lands within a fraction of a microsecond of
// its tick, whatever else runs. The cost is at most 40 us with interrupts off per pulse, less than
// half a character time at 115200 baud (the UART holds two received characters).
//
// A frame's widths and pins are taken when the previous frame ends, so a change shows from the
// next frame on, a pulse in progress keeps its width, and nothing waits for a safe window.
#ifndef ROBOHAL_SERVO_CHANNELS_H
#define ROBOHAL_SERVO_CHANNELS_H

#include <Arduino.h>
#include <avr/interrupt.h>

static const uint8_t CHANNELS_MAX = 12;                 // Servo.h: SERVOS_PER_TIMER on one 16-bit timer
static const uint16_t CHANNEL_FRAME_TICKS = 40000;       // 20 ms at 0.5 us per tick
// Our choices: the early wake-up (40 us: more than any interrupt or cli() section of this firmware
// and the core lasts, and under the 127 ticks the wait's 8-bit compare can span) and the least
// pause after a frame's last pulse before the next frame.
static const uint8_t CHANNEL_LEAD_TICKS = 80;
static const uint16_t CHANNEL_GAP_TICKS = 1000;

struct ChannelPin {
  volatile uint8_t *port;                                // PORTx of the pin (or channelDummy: no pin)
  uint8_t mask;
};

static volatile uint8_t channelDummy = 0;                 // an edge without a pin writes here
static ChannelPin channelPin[CHANNELS_MAX];               // written by the main loop with interrupts off
static uint16_t channelTicks[CHANNELS_MAX];               // pulse length in ticks; 0 = no pulses

// The running frame, the interrupt's own: slot 0 and the last are no pin (the frame's first edge
// only rises, its last only falls).
static ChannelPin slotPin[CHANNELS_MAX + 2];
static uint16_t slotTicks[CHANNELS_MAX];
static uint8_t slotCount = 0, slotIndex = 0;
static uint16_t frameStart = 0, edgeTick = 0;

// Takes the widths and pins for the frame that starts at frameStart.
static void channelsPlanFrame() {
  slotCount = 0;
  slotPin[0].port = &channelDummy;
  slotPin[0].mask = 0;
  for (uint8_t i = 0; i < CHANNELS_MAX; i++) {
    if (channelTicks[i] == 0) continue;
    slotTicks[slotCount] = channelTicks[i];
    slotPin[++slotCount] = channelPin[i];
  }
  slotPin[slotCount + 1].port = &channelDummy;
  slotPin[slotCount + 1].mask = 0;
  slotIndex = 0;
  edgeTick = frameStart;
}

static void channelsBegin() {
  for (uint8_t i = 0; i < CHANNELS_MAX; i++) {
    channelPin[i].port = &channelDummy;
    channelPin[i].mask = 0;
    channelTicks[i] = 0;
  }
  uint8_t sreg = SREG;
  cli();
  TIMSK1 = 0;
  TCCR1B = 0;
  TCCR1A = 0;                                            // normal mode, OC1A/OC1B disconnected
  PORTB &= ~((1 << PB1) | (1 << PB2));
  TCNT1 = 0;
  frameStart = 1000;                                     // the first frame starts 0.5 ms from now
  channelsPlanFrame();
  OCR1A = edgeTick - CHANNEL_LEAD_TICKS;
  TIFR1 = (1 << OCF1A) | (1 << TOV1);
  TIMSK1 = (1 << OCIE1A);
  TCCR1B = (1 << CS11);                                  // prescaler 8: start
  SREG = sreg;
}

// The pin of channel i (an Arduino pin number, already checked), or no pin; as an output, low.
static void channelSetPin(uint8_t i, uint8_t pin) {
  uint8_t sreg = SREG;
  cli();
  volatile uint8_t *port = portOutputRegister(digitalPinToPort(pin));
  uint8_t mask = digitalPinToBitMask(pin);
  *port &= ~mask;
  *portModeRegister(digitalPinToPort(pin)) |= mask;
  channelPin[i].port = port;
  channelPin[i].mask = mask;
  SREG = sreg;
}

// Channel i's pulse width from the next frame on (within the 500-2500 us envelope), or 0: none.
static void channelOutput(uint8_t i, uint16_t widthUs) {
  uint8_t sreg = SREG;
  cli();
  channelTicks[i] = widthUs * 2;
  SREG = sreg;
}

ISR(TIMER1_COMPA_vect) {
  volatile uint8_t *fallPort = slotPin[slotIndex].port, *risePort = slotPin[slotIndex + 1].port;
  uint8_t fallMask = ~slotPin[slotIndex].mask, riseMask = slotPin[slotIndex + 1].mask;
  uint8_t due = (uint8_t)edgeTick;
  while ((int8_t)(TCNT1L - due) < 0) {}                  // interrupts are off in here: wait for the tick
  *fallPort &= fallMask;                                 // the pulse before ends
  *risePort |= riseMask;                                 // the next begins
  if (slotIndex < slotCount) {
    edgeTick += slotTicks[slotIndex++];
  } else {
    uint16_t used = edgeTick - frameStart + CHANNEL_GAP_TICKS;
    frameStart += used > CHANNEL_FRAME_TICKS ? used : CHANNEL_FRAME_TICKS;
    channelsPlanFrame();
  }
  OCR1A = edgeTick - CHANNEL_LEAD_TICKS;
}

#endif
