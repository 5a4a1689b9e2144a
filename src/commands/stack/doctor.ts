import { Flags } from '@oclif/core';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { renderDoctorReport } from '../../launcher/doctor/render-doctor.js';
import { ExitCode, type ExitCodeValue } from '../../errors.js';
import { doctorStack } from '../../launcher/doctor/stack-doctor.js';
import type { DoctorReport } from '../../launcher/doctor/doctor-report.js';

export default class StackDoctor extends LexecCommand<DoctorReport> {
  static override summary = 'Check the profile, its active generation, lineage, ports, credential and state permissions and disk space (read-only).';
  static override description =
    'Changes no file and calls no provider. `--json` prints the version-3 report (stable check ids, each pass/warn/fail/skip with a fix hint, the provider catalog, lineage). Exits 3 when a check fails; the report is printed either way. With --fix-permissions it first removes group and other permission bits from the profile\'s own state (never credentials, never a file\'s content), then checks.';
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --profile live --json',
    '<%= config.bin %> <%= command.id %> --fix-permissions',
  ];
  static override flags = {
    ...profileFlags,
    'fix-permissions': Flags.boolean({
      default: false,
      summary: "Remove group and other permission bits from the profile's state and logs (not its credentials) before checking.",
    }),
  };

  protected override async execute(): Promise<DoctorReport> {
    const { flags } = await this.parse(StackDoctor);
    return doctorStack({ env: process.env, profileFlag: flags.profile, fixPermissions: flags['fix-permissions'] });
  }

  protected override renderHuman(result: DoctorReport, output: Output): void {
    renderDoctorReport(result, output);
  }

  protected override resultExitCode(result: DoctorReport): ExitCodeValue {
    return result.overall === 'fail' ? ExitCode.doctorFailed : ExitCode.ok;
  }
}
