export {
  EDGE_VALIDATE_BODY_LIMIT,
  MAX_TOKENS_PER_VALIDATION,
  validateTokensSchema,
} from '../../common/edge/validate-request';

/** One confirmed token of the answer (Unleash's edgeTokenSchema, with its environment). */
export interface EdgeToken {
  token: string;
  type: 'client' | 'frontend' | 'admin';
  /** Absent for a token that names no environment. */
  environment?: string;
  /** `["*"]` for every project. */
  projects: string[];
}
