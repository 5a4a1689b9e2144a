import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../cli/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { renderDoctorReport } from '../../cli/render-doctor.js';
import { ExitCode, type ExitCodeValue } from '../../errors.js';
import { doctorStack } from '../../launcher/doctor/stack-doctor.js';
import type { DoctorReport } from '../../launcher/doctor/doctor-report.js';

export default class StackDoctor extends LexecCommand<DoctorReport> {
  static override summary = 'Check the profile, its active generation, lineage, ports, credential permissions and disk space (read-only).';
  static override description =
    'Changes no file and calls no provider. `--json` prints the version-2 report (stable check ids, each pass/warn/fail/skip with a fix hint, the provider catalog, lineage). Exits 3 when a check fails; the report is printed either way.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --profile live --json'];
  static override flags = { ...profileFlags };

  protected override async execute(): Promise<DoctorReport> {
    const { flags } = await this.parse(StackDoctor);
    return doctorStack({ env: process.env, profileFlag: flags.profile });
  }

  protected override renderHuman(result: DoctorReport, output: Output): void {
    renderDoctorReport(result, output);
  }

  protected override resultExitCode(result: DoctorReport): ExitCodeValue {
    return result.overall === 'fail' ? ExitCode.doctorFailed : ExitCode.ok;
  }
}
