/** Types for frame-mac.cjs (plain JS: the sandbox harness loads it in a child that compiles nothing). */
export declare function frameMac(key: Uint8Array): (seq: number, body: string) => string;
