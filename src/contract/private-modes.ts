/*
 * Forge's state is its own user's: FORGE_HOME and everything Forge creates in it (the PGlite data, the dev server's
 * database and log, attempts/, the read API's token), and agent-tools/ (other tools' code), are created with these
 * modes, so that neither a tool run as another user nor any other account on the host can read or change them
 * (TOOL_CONTRACT.md, "What a tool can reach"). Numbers only, so every layer can use them.
 */

/** A directory of Forge's state: its owner only. */
export const PRIVATE_DIR_MODE = 0o700;

/** A file of Forge's state: its owner only. */
export const PRIVATE_FILE_MODE = 0o600;
