// macros/: SillyTavern's macros in a character's text ({{char}}, {{user}}, {{original}}), expanded as it does.
// Pure, shared with the web app (the NPC editor warns of macros no prompt would expand).
export { expandMacros, type MacroContext, unknownMacros } from './expand.ts';
