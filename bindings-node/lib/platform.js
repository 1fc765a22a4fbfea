// Which prebuilt addon fits this process: napi-rs's platform names (`linux-x64-gnu`,
// `linux-arm64-musl`, `darwin-arm64`, `win32-x64-msvc`, ...). A package built by scripts/package
// carries `zkrecipes.<name>.node` for the platforms it was built on (docs/PACKAGING.md says how
// to add one); a source checkout builds `zkrecipes.node` instead.
'use strict';

/** True on a musl libc (Alpine): Node's report has no glibc version there. */
function isMusl() {
  if (process.platform !== 'linux') return false;
  const header = process.report && process.report.getReport ? process.report.getReport().header : null;
  return !(header && header.glibcVersionRuntime);
}

/** This process's platform name, as in the prebuilt addon's file name. */
function platformName() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/** The file name of the prebuilt addon for `name` (default: this process's platform). */
function prebuiltFile(name = platformName()) {
  return `zkrecipes.${name}.node`;
}

module.exports = { platformName, prebuiltFile };
