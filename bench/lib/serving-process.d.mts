/** The pid of the process serving for the spawned `pid`: its one child running rmbg, else `pid` itself (Linux). */
export function servingPid(pid: number): number;
