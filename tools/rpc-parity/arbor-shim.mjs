// pi's RpcClient starts `node <cliPath> --mode rpc ...`; this stands in for pi's cli.js and runs
// the arbor binary named by ARBOR_BIN with the same arguments and the same stdio, passing
// SIGTERM on and exiting as arbor exits.
import { spawn } from "node:child_process";

const child = spawn(process.env.ARBOR_BIN, process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
