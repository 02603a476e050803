// Preloaded into each Node process bench/profile.ts starts (NODE_OPTIONS=--import …; Node 20 does
// not take --cpu-prof there): samples the process's CPU from start to exit and writes
// <WAYMARK_PROFILE_DIR>/<pid>.cpuprofile when it exits (a SIGKILLed process writes none). SIGUSR2
// throws away what was sampled so far (the harness sends it after a warm-up).
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';
import process from 'node:process';

const dir = process.env.WAYMARK_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 500 });
  session.post('Profiler.start');
  process.on('SIGUSR2', () => {
    session.post('Profiler.stop', () => session.post('Profiler.start'));
  });
  // A same-thread inspector session answers synchronously, so this works inside 'exit'.
  process.once('exit', () => {
    session.post('Profiler.stop', (error, result) => {
      if (!error) writeFileSync(path.join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
