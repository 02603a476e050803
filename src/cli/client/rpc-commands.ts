/*
 * The server's messages name RPCs ("ListWorkflows shows the registered ones"): right for a program
 * calling the API, wrong for a person at a terminal, who needs the command to run next. The
 * operator commands put the command in the RPC's place before printing a server's message.
 */

/** Each RPC a server message may point to, and the command that makes that call. */
const COMMAND_OF_RPC: Record<string, string> = {
  ListWorkflows: 'waymark workflows list',
  ListTools: 'waymark tools list',
  ListRuns: 'waymark runs list',
  GetRun: 'waymark runs get',
  ListApprovals: 'waymark approvals list',
  DecideApproval: 'waymark approvals complete',
  ListFlows: 'waymark flows list',
  RegisterFlow: 'waymark flows register',
  SendSignal: 'waymark signals send',
  ResumeRun: 'waymark runs resume',
  StreamRunEvents: 'waymark runs events',
  CreateKey: 'waymark keys create',
  ListKeys: 'waymark keys list',
  RevokeKey: 'waymark keys revoke',
  StartRun: 'waymark runs start',
  CancelRun: 'waymark runs cancel',
  GetJournal: 'waymark runs journal',
  GetApproval: 'waymark approvals get',
  GetFlow: 'waymark flows get',
  GetRunProvenance: 'waymark runs provenance',
};

const RPC_NAME = new RegExp(`\\b(${Object.keys(COMMAND_OF_RPC).join('|')})\\b`, 'g');

/** `message` with every RPC name it mentions replaced by the command that makes the call. */
export function withCommandNames(message: string): string {
  return message.replace(RPC_NAME, (rpc) => COMMAND_OF_RPC[rpc]!);
}
